"""Run a tools/bench script or the calibration with the AVX2 (x86-64-v3) build of gateway._native."""
import importlib.util, runpy, sys, glob
import gateway
so = glob.glob("/tmp/calib/avx2build/_native*.so")[0]
spec = importlib.util.spec_from_file_location("gateway._native", so)
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
sys.modules["gateway._native"] = mod; gateway._native = mod
print("module:", mod.quant_simd_name(), so, file=sys.stderr)
if sys.argv[1] == "calibrate":
    import os
    from gateway.llm import kernel_plan
    doc = kernel_plan.calibrate(os.path.expanduser("~/.cache/linegate/models/qwen2.5-coder-1.5b-instruct.gguf"), 2)
    kernel_plan.save(doc, sys.argv[2])
    print(doc["seconds"], doc["complete"], doc["build_id"])
    for c in doc["choices"]:
        if c["variant"] != "static":
            print(c["type"], c["K"], c["n_rec"], c["variant"], c["ms"], c.get("confirm_ms"))
else:
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
