// pm_sampling_probe: does a CUPTI PM-sampling session work on this GPU and in this VM?
// (issue 19: "whether CUPTI PM sampling works in that VM"). It lists the PM-sampling metrics the
// chip offers, configures those of a candidate list that are accepted, samples a bf16 cuBLAS
// GEMM load for ~2 s, decodes the samples and prints each metric's mean over them.
// With `--external SECONDS` it runs no load of its own and samples for that long: whether PM
// sampling sees another process's kernels.
// Build (on the device): nvcc -O2 -o pmprobe pm_sampling_probe.cu -lcupti -lcublas -lcuda
// Prints "PM_SAMPLING: works" or "PM_SAMPLING: fails at <call>: <CUPTI message>"; exit 0 / 1.
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

bool ok(CUptiResult r, const char* call) {
  if (r == CUPTI_SUCCESS) return true;
  const char* msg = nullptr;
  cuptiGetResultString(r, &msg);
  std::printf("PM_SAMPLING: fails at %s: %s (%d)\n", call, msg ? msg : "?", static_cast<int>(r));
  return false;
}
#define TRY(call, params) \
  if (!ok(call(&params), #call)) return 1

CUpti_Profiler_Host_Object* host_object(const char* chip, const std::vector<uint8_t>& avail) {
  CUpti_Profiler_Host_Initialize_Params p{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
  p.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
  p.pChipName = chip;
  p.pCounterAvailabilityImage = avail.data();
  if (!ok(cuptiProfilerHostInitialize(&p), "cuptiProfilerHostInitialize")) return nullptr;
  return p.pHostObject;
}
void host_free(CUpti_Profiler_Host_Object* h) {
  CUpti_Profiler_Host_Deinitialize_Params p{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
  p.pHostObject = h;
  cuptiProfilerHostDeinitialize(&p);
}

}  // namespace

int main(int argc, char** argv) {
  const double external_s = argc == 3 && std::strcmp(argv[1], "--external") == 0 ? std::atof(argv[2]) : 0;
  if (cudaFree(nullptr) != cudaSuccess) {
    std::printf("PM_SAMPLING: fails at cudaFree(0): no CUDA device\n");
    return 1;
  }
  CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  TRY(cuptiProfilerInitialize, init);
  CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  chip.deviceIndex = 0;
  TRY(cuptiDeviceGetChipName, chip);
  std::printf("chip: %s\n", chip.pChipName);
  CUpti_PmSampling_GetCounterAvailability_Params av{CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE};
  av.deviceIndex = 0;
  TRY(cuptiPmSamplingGetCounterAvailability, av);
  std::vector<uint8_t> avail(av.counterAvailabilityImageSize);
  av.pCounterAvailabilityImage = avail.data();
  TRY(cuptiPmSamplingGetCounterAvailability, av);

  // What the chip offers for PM sampling (base metrics of every type).
  CUpti_Profiler_Host_Object* host = host_object(chip.pChipName, avail);
  if (!host) return 1;
  std::size_t offered = 0;
  for (CUpti_MetricType t : {CUPTI_METRIC_TYPE_COUNTER, CUPTI_METRIC_TYPE_RATIO, CUPTI_METRIC_TYPE_THROUGHPUT}) {
    CUpti_Profiler_Host_GetBaseMetrics_Params bm{CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE};
    bm.pHostObject = host;
    bm.metricType = t;
    if (!ok(cuptiProfilerHostGetBaseMetrics(&bm), "cuptiProfilerHostGetBaseMetrics")) continue;
    offered += bm.numMetrics;
    for (std::size_t i = 0; i < bm.numMetrics; ++i) {
      const std::string n = bm.ppMetricNames[i];
      if (n.find("tensor") != std::string::npos || n.rfind("sm__cycles", 0) == 0 || n.rfind("dram", 0) == 0 ||
          n.rfind("gr__", 0) == 0 || n.find("pipe_fma") != std::string::npos || n.find("pipe_fp64") != std::string::npos)
        std::printf("  offered: %s (type %d)\n", n.c_str(), static_cast<int>(t));
    }
  }
  std::printf("base metrics offered: %zu\n", offered);
  host_free(host);

  // Candidates: each is kept when a host object accepts it alone.
  const char* candidates[] = {"gr__cycles_active.avg",
                              "sm__cycles_active.avg",
                              "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                              "dram__throughput.avg.pct_of_peak_sustained_elapsed",
                              "dramc__read_throughput.avg.pct_of_peak_sustained_elapsed",
                              "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
                              "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
                              "sm__inst_executed_pipe_tensor.sum",
                              "sm__warps_active.avg.pct_of_peak_sustained_active",
                              "gpc__cycles_elapsed.max"};
  // PM sampling collects in one pass: a candidate is kept when the set with it still needs one.
  auto passes_of = [&](const std::vector<const char*>& set) -> std::size_t {
    CUpti_Profiler_Host_Object* h = host_object(chip.pChipName, avail);
    if (!h) return 0;
    CUpti_Profiler_Host_ConfigAddMetrics_Params am{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    am.pHostObject = h;
    am.ppMetricNames = const_cast<const char**>(set.data());
    am.numMetrics = set.size();
    std::size_t passes = 0;
    if (cuptiProfilerHostConfigAddMetrics(&am) == CUPTI_SUCCESS) {
      CUpti_Profiler_Host_GetConfigImageSize_Params cs{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
      cs.pHostObject = h;
      if (cuptiProfilerHostGetConfigImageSize(&cs) == CUPTI_SUCCESS) {
        std::vector<uint8_t> img(cs.configImageSize);
        CUpti_Profiler_Host_GetConfigImage_Params ci{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
        ci.pHostObject = h;
        ci.configImageSize = img.size();
        ci.pConfigImage = img.data();
        CUpti_Profiler_Host_GetNumOfPasses_Params np{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
        np.pConfigImage = img.data();
        np.configImageSize = img.size();
        if (cuptiProfilerHostGetConfigImage(&ci) == CUPTI_SUCCESS && cuptiProfilerHostGetNumOfPasses(&np) == CUPTI_SUCCESS)
          passes = np.numOfPasses;
      }
    }
    host_free(h);
    return passes;
  };
  std::vector<const char*> metrics;
  for (const char* c : candidates) {
    std::vector<const char*> with = metrics;
    with.push_back(c);
    const std::size_t passes = passes_of(with);
    std::printf("  candidate %s: %s (passes with it: %zu)\n", c, passes == 1 ? "kept" : "left out", passes);
    if (passes == 1) metrics = with;
  }
  if (metrics.empty()) {
    std::printf("PM_SAMPLING: fails: no candidate metric accepted\n");
    return 1;
  }
  host = host_object(chip.pChipName, avail);
  if (!host) return 1;
  CUpti_Profiler_Host_ConfigAddMetrics_Params am{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
  am.pHostObject = host;
  am.ppMetricNames = metrics.data();
  am.numMetrics = metrics.size();
  TRY(cuptiProfilerHostConfigAddMetrics, am);
  CUpti_Profiler_Host_GetConfigImageSize_Params cs{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
  cs.pHostObject = host;
  TRY(cuptiProfilerHostGetConfigImageSize, cs);
  std::vector<uint8_t> config(cs.configImageSize);
  CUpti_Profiler_Host_GetConfigImage_Params ci{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
  ci.pHostObject = host;
  ci.configImageSize = config.size();
  ci.pConfigImage = config.data();
  TRY(cuptiProfilerHostGetConfigImage, ci);
  CUpti_Profiler_Host_GetNumOfPasses_Params np{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
  np.pConfigImage = config.data();
  np.configImageSize = config.size();
  if (cuptiProfilerHostGetNumOfPasses(&np) == CUPTI_SUCCESS) std::printf("passes needed: %zu\n", np.numOfPasses);

  CUpti_PmSampling_Enable_Params en{CUpti_PmSampling_Enable_Params_STRUCT_SIZE};
  en.deviceIndex = 0;
  TRY(cuptiPmSamplingEnable, en);
  CUpti_PmSampling_SetConfig_Params sc{CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE};
  sc.pPmSamplingObject = en.pPmSamplingObject;
  sc.configSize = config.size();
  sc.pConfig = config.data();
  sc.hardwareBufferSize = 512u << 20;
  sc.samplingInterval = 10'000'000;  // 10 ms
  sc.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
  sc.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
  TRY(cuptiPmSamplingSetConfig, sc);
  CUpti_PmSampling_GetCounterDataSize_Params ds{CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE};
  ds.pPmSamplingObject = en.pPmSamplingObject;
  ds.pMetricNames = metrics.data();
  ds.numMetrics = metrics.size();
  ds.maxSamples = 2000;
  TRY(cuptiPmSamplingGetCounterDataSize, ds);
  std::vector<uint8_t> data(ds.counterDataSize);
  CUpti_PmSampling_CounterDataImage_Initialize_Params di{CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  di.pPmSamplingObject = en.pPmSamplingObject;
  di.counterDataSize = data.size();
  di.pCounterData = data.data();
  TRY(cuptiPmSamplingCounterDataImageInitialize, di);

  // The load: bf16 GEMMs 4096^3 for ~2 s.
  const int n = 4096;
  __nv_bfloat16 *a = nullptr, *b = nullptr, *c = nullptr;
  cudaMalloc(&a, sizeof(*a) * n * n);
  cudaMalloc(&b, sizeof(*b) * n * n);
  cudaMalloc(&c, sizeof(*c) * n * n);
  cudaMemset(a, 0, sizeof(*a) * n * n);
  cudaMemset(b, 0, sizeof(*b) * n * n);
  cublasHandle_t blas;
  cublasCreate(&blas);
  const float one = 1, zero = 0;
  CUpti_PmSampling_Start_Params st{CUpti_PmSampling_Start_Params_STRUCT_SIZE};
  st.pPmSamplingObject = en.pPmSamplingObject;
  TRY(cuptiPmSamplingStart, st);
  const auto t0 = std::chrono::steady_clock::now();
  int gemms = 0;
  while (external_s > 0 && std::chrono::steady_clock::now() - t0 < std::chrono::duration<double>(external_s)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  while (external_s == 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2)) {
    for (int i = 0; i < 10; ++i, ++gemms)
      cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_16BF, n, b, CUDA_R_16BF, n, &zero, c,
                   CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    cudaDeviceSynchronize();
  }
  CUpti_PmSampling_Stop_Params sp{CUpti_PmSampling_Stop_Params_STRUCT_SIZE};
  sp.pPmSamplingObject = en.pPmSamplingObject;
  TRY(cuptiPmSamplingStop, sp);
  if (external_s > 0) std::printf("load: none of its own, sampled %g s\n", external_s);
  else std::printf("load: %d GEMMs %dx%dx%d bf16 in 2 s\n", gemms, n, n, n);
  CUpti_PmSampling_DecodeData_Params dd{CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE};
  dd.pPmSamplingObject = en.pPmSamplingObject;
  dd.pCounterDataImage = data.data();
  dd.counterDataImageSize = data.size();
  TRY(cuptiPmSamplingDecodeData, dd);
  std::printf("decode: stop reason %d, overflow %d\n", static_cast<int>(dd.decodeStopReason), dd.overflow);
  CUpti_PmSampling_GetCounterDataInfo_Params info{CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE};
  info.pCounterDataImage = data.data();
  info.counterDataImageSize = data.size();
  TRY(cuptiPmSamplingGetCounterDataInfo, info);
  std::printf("samples: total %zu populated %zu completed %zu\n", info.numTotalSamples, info.numPopulatedSamples,
              info.numCompletedSamples);
  std::vector<double> sum(metrics.size(), 0.0), values(metrics.size());
  std::size_t used = 0;
  for (std::size_t i = 0; i < info.numCompletedSamples; ++i) {
    CUpti_Profiler_Host_EvaluateToGpuValues_Params ev{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    ev.pHostObject = host;
    ev.pCounterDataImage = data.data();
    ev.counterDataImageSize = data.size();
    ev.rangeIndex = i;
    ev.ppMetricNames = metrics.data();
    ev.numMetrics = metrics.size();
    ev.pMetricValues = values.data();
    if (!ok(cuptiProfilerHostEvaluateToGpuValues(&ev), "cuptiProfilerHostEvaluateToGpuValues")) break;
    for (std::size_t k = 0; k < metrics.size(); ++k) sum[k] += values[k];
    ++used;
  }
  for (std::size_t k = 0; k < metrics.size(); ++k)
    std::printf("  mean over %zu samples: %s = %g\n", used, metrics[k], used ? sum[k] / static_cast<double>(used) : 0.0);
  CUpti_PmSampling_Disable_Params dis{CUpti_PmSampling_Disable_Params_STRUCT_SIZE};
  dis.pPmSamplingObject = en.pPmSamplingObject;
  cuptiPmSamplingDisable(&dis);
  host_free(host);
  std::printf(used > 0 ? "PM_SAMPLING: works\n" : "PM_SAMPLING: fails: no sample decoded\n");
  return used > 0 ? 0 : 1;
}
