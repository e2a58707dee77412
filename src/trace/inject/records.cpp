#include "records.hpp"

#include <cstring>
#include <string>

namespace jouleprof::inject {

using namespace trace_format;

static_assert(kAnchorDriverCbid == CUPTI_DRIVER_TRACE_CBID_cuDriverGetVersion, "the anchor call's callback id");

namespace {

template <class K>
KernelRecord kernel_record(const K& k, TraceWriter& w) {
  KernelRecord r{};
  r.start_ns = k.start;
  r.end_ns = k.end;
  r.device = k.deviceId;
  r.context = k.contextId;
  r.stream = k.streamId;
  r.correlation = k.correlationId;
  r.grid_x = k.gridX;
  r.grid_y = k.gridY;
  r.grid_z = k.gridZ;
  r.block_x = k.blockX;
  r.block_y = k.blockY;
  r.block_z = k.blockZ;
  r.registers = k.registersPerThread;
  r.static_shared_bytes = static_cast<uint32_t>(k.staticSharedMemory);
  r.dynamic_shared_bytes = static_cast<uint32_t>(k.dynamicSharedMemory);
  r.name_id = w.intern(k.name != nullptr ? k.name : "(unnamed kernel)");
  r.graph_id = k.graphId;
  return r;
}

}  // namespace

bool convert_record(const CUpti_Activity* a, TraceWriter& w) {
  switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(a);
      w.add(RecordType::kernel, kernel_record(*k, w));
      return true;
    }
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: {
      // One launch of a whole graph: a kernel-like record named by the graph (format.hpp).
      const auto* g = reinterpret_cast<const CUpti_ActivityGraphTrace2*>(a);
      KernelRecord r{};
      r.start_ns = g->start;
      r.end_ns = g->end;
      r.device = g->deviceId;
      r.context = g->contextId;
      r.stream = g->streamId;
      r.correlation = g->correlationId;
      r.graph_id = g->graphId;
      r.name_id = w.intern(kGraphRecordPrefix + std::to_string(g->graphId));
      w.add(RecordType::kernel, r);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(a);
      CopyRecord r{m->start, m->end, m->deviceId, m->contextId, m->streamId, m->correlationId, m->bytes, m->copyKind, 0};
      w.add(RecordType::memcpy, r);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(a);
      CopyRecord r{m->start, m->end, m->deviceId, m->contextId, m->streamId, m->correlationId, m->bytes, m->copyKind, 0};
      w.add(RecordType::memcpy, r);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(a);
      CopyRecord r{m->start, m->end, m->deviceId, m->contextId, m->streamId, m->correlationId, m->bytes, m->value, 0};
      w.add(RecordType::memset, r);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(a);
      SyncRecord r{s->start, s->end, static_cast<uint32_t>(s->type), s->contextId, s->streamId, s->correlationId};
      w.add(RecordType::sync, r);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMarker2*>(a);
      MarkerRecord r{};
      r.timestamp_ns = m->timestamp;
      r.id = m->id;
      r.flags = static_cast<uint32_t>(m->flags) & (marker_instant | marker_start | marker_end);
      r.object_kind = static_cast<uint32_t>(m->objectKind);
      r.object_id = m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? m->objectId.pt.threadId : m->objectId.pt.processId;
      if (m->name != nullptr && (r.flags & marker_end) == 0) r.name_id = w.intern(m->name);
      if (m->domain != nullptr && m->domain[0] != '\0') r.domain_id = w.intern(m->domain);
      w.add(RecordType::marker, r);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {
      const auto* d = reinterpret_cast<const CUpti_ActivityDevice5*>(a);
      DeviceRecord r{};
      r.id = d->id;
      r.name_id = w.intern(d->name != nullptr ? d->name : "");
      std::memcpy(r.uuid, d->uuid.bytes, sizeof(r.uuid));
      w.add(RecordType::device, r);
      return false;  // not an activity
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* c = reinterpret_cast<const CUpti_ActivityAPI*>(a);
      ApiRecord r{c->start, c->end, c->correlationId, c->threadId, static_cast<uint32_t>(c->cbid),
                  a->kind == CUPTI_ACTIVITY_KIND_DRIVER ? 1u : 0u};
      w.add(RecordType::api, r);
      return true;
    }
    default:
      return false;
  }
}

std::size_t convert_buffer(uint8_t* buffer, size_t valid_bytes, NextRecordFn next, TraceWriter& w) {
  std::size_t n = 0;
  CUpti_Activity* record = nullptr;
  while (next(buffer, valid_bytes, &record) == CUPTI_SUCCESS && record != nullptr) {
    if (convert_record(record, w)) {
      ++n;
      w.count_activity();
    }
  }
  return n;
}

}  // namespace jouleprof::inject
