import os, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
torch.cuda.synchronize()
m = open(os.environ["JOULEPROF_MARKERS"], "w", buffering=1) if "JOULEPROF_MARKERS" in os.environ else None
if m: m.write("begin compute\n")
t = time.time()
while time.time() - t < float(os.environ.get("JOULEPROF_PARAM_SECONDS", "1.5")):
    for _ in range(20): a @ b
    torch.cuda.synchronize()
if m: m.write("end compute\n")
