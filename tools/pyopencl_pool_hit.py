"""PyOpenCL's pool hit alone (the `pool_hit_alloc_free_ns_<size>` of pyopencl_probe.py, measured the
same way: a Python function that allocates from a `MemoryPool(ImmediateAllocator(queue))` and drops
the block), repeated, for side-by-side rounds with criterion's `pool_hit_alloc_free/<size>`.

usage: python3 pyopencl_pool_hit.py [device-substring (default: first GPU)] [size] [iterations] [repeats]
Output: one line per repeat, `pyopencl_pool_hit_alloc_free_ns_<size> <ns>`.
"""
import sys, time
import pyopencl as cl
import pyopencl.tools as tools

want = sys.argv[1].lower() if len(sys.argv) > 1 else ""
size = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
n = int(sys.argv[3]) if len(sys.argv) > 3 else 200000
repeats = int(sys.argv[4]) if len(sys.argv) > 4 else 3

devs = [d for p in cl.get_platforms() for d in p.get_devices()]
pick = [d for d in devs if want and (want in d.name.lower() or want in d.platform.name.lower())]
if not pick:
    pick = [d for d in devs if d.type & cl.device_type.GPU] or devs
dev = pick[0]
ctx = cl.Context([dev]); queue = cl.CommandQueue(ctx)
pool = tools.MemoryPool(tools.ImmediateAllocator(queue))

def once():
    x = pool.allocate(size)
    del x

print("# PyOpenCL %s on %s" % (cl.VERSION_TEXT, dev.name))
for _ in range(repeats):
    once()  # warm (the first allocation is a miss)
    t0 = time.perf_counter()
    for _ in range(n):
        once()
    print("pyopencl_pool_hit_alloc_free_ns_%d %.1f" % (size, (time.perf_counter() - t0) / n * 1e9))
