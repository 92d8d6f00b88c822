"""Regenerates tests/expected/*.json: real PyOpenCL's characterize results for each recorded profile.

Runs the unmodified `pyopencl.characterize` functions on stand-in device objects built from
tests/profiles/*.json (the method of reference section 6.2, "verified with fake devices"), through the
same `char_report` as tools/pyopencl_probe.py, so the keys and error texts are identical.
A device attribute the profile does not hold raises, as the driver query would; the two kernel
probes answer from the profile's probe fields.

    usage: ~/.cache/pyopencl-reference/bin/python tests/pyopencl_expected.py PATH/TO/pyopencl_probe.py
"""
import json
import os
import sys
import warnings

import pyopencl as cl
import pyopencl.characterize as ch

here = os.path.dirname(os.path.abspath(__file__))
probe_src = open(sys.argv[1]).read()
# Take `safe` and `char_report` from the probe script without running its device loop.
ns = {}
exec(probe_src.split("def timeit")[0], ns)
char_report = ns["char_report"]


class LogicError(cl.LogicError):
    pass


class FakePlatform:
    def __init__(self, p):
        self.name, self.vendor, self.version = p["name"], p["vendor"], p["version"]

    def _get_cl_version(self):
        from pyopencl._monkeypatch import generic_get_cl_version
        return generic_get_cl_version(self)


class FakeDevice:
    def __init__(self, prof):
        self._p = prof
        self.platform = FakePlatform(prof["platform"])
        for k in ("name", "vendor", "version", "driver_version", "extensions", "local_mem_size"):
            setattr(self, k, prof[k])
        self.type = prof["type"]
        self.local_mem_type = {"none": 0, "local": 1, "global": 2}[prof["local_mem_type"]]

    def _get(self, key):
        v = self._p.get(key)
        if v is None:
            raise LogicError("clGetDeviceInfo failed: INVALID_VALUE")
        return v

    warp_size_nv = property(lambda self: self._get("nv_warp_size"))
    compute_capability_major_nv = property(lambda self: self._get("nv_compute_capability")[0])
    compute_capability_minor_nv = property(lambda self: self._get("nv_compute_capability")[1])
    svm_capabilities = property(lambda self: self._get("svm_capabilities"))

    def __repr__(self):
        return self.name


class FakeKernel:
    def __init__(self, dev, name):
        self.dev, self.name = dev, name

    def get_work_group_info(self, param, dev):
        assert param == cl.kernel_work_group_info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE
        return dev._get("kernel_preferred_work_group_size_multiple")

    @property
    def num_args(self):
        return 2 if self.dev._get("pocl_struct_arg_count_bug") else 1


class FakeProgram:
    def __init__(self, ctx, src):
        self.dev = ctx

    def build(self):
        return self

    def __getattr__(self, name):
        return FakeKernel(self.dev, name)


cl.Context = lambda devices: devices[0]
cl.Program = FakeProgram

out_dir = os.path.join(here, "expected")
os.makedirs(out_dir, exist_ok=True)
for fn in sorted(os.listdir(os.path.join(here, "profiles"))):
    prof = json.load(open(os.path.join(here, "profiles", fn)))
    dev = FakeDevice(prof)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = char_report(dev)
        r["reasonable_work_group_size_multiple"] = ns["safe"](ch.reasonable_work_group_size_multiple, dev)
    with open(os.path.join(out_dir, fn), "w") as f:
        json.dump(r, f, indent=1, default=str)
        f.write("\n")
    print(fn)
