"""Store-forwarding failures per loop iteration, from a valgrind lackey memory trace.

A load that reads bytes written by more than one recent store, or by a store that does not
contain it whole, cannot take its data from the store buffer and waits for those stores to reach
the cache (a store-forwarding stall, about a dozen cycles on current x86 cores). A memcpy of a
value stored field by field and read back as 16-byte chunks is the usual cause. Machines without
performance counters (the VM) cannot count them; this counts them exactly in a trace.

Usage (tools/sf/run.sh wraps it): python3 store_forwarding.py TRACE [WINDOW_STORES [BIN_BYTES]]
Prints the loads, the failing loads and, per instruction address (valgrind maps a PIE binary at
0x108000: subtract it for objdump), the load size, the sizes of the stores it spans, and how
often. Only the middle of the trace is read (the steady state of a loop). With BIN_BYTES (the
program file's size) a window holding none of the program's own instructions is an error: the
loop is not in it (a program whose start-up, a driver's, outweighs its loop).
"""
import collections
import sys

path = sys.argv[1]
window = int(sys.argv[2]) if len(sys.argv) > 2 else 48  # stores still in the store buffer
bin_bytes = int(sys.argv[3]) if len(sys.argv) > 3 else None
own = 0  # instructions of the program itself (valgrind maps a PIE binary at 0x108000)
trace = [l for l in open(path).read().splitlines() if l[:2] in ("I ", " L", " S", " M")]
middle = trace[len(trace) // 2 : len(trace) // 2 + 200_000]
last_store = {}  # byte address -> (store number, store address, store size)
stores = 0
ip = 0
loads = 0
fails = collections.Counter()
for line in middle:
    kind = line[:2]
    addr, size = line[3:].split(",")
    addr, size = int(addr, 16), int(size)
    if kind == "I ":
        ip = addr
        own += bin_bytes is not None and 0x108000 <= addr < 0x108000 + bin_bytes
        continue
    if kind in (" L", " M"):
        loads += 1
        covering = {
            w for b in range(addr, addr + size)
            if (w := last_store.get(b)) and stores - w[0] <= window
        }
        if covering:
            (only,) = covering if len(covering) == 1 else (None,)
            whole = (
                only is not None
                and only[1] <= addr
                and addr + size <= only[1] + only[2]
            )
            if not whole:
                fails[(ip, size, tuple(sorted(w[2] for w in covering)))] += 1
    if kind in (" S", " M"):
        stores += 1
        for b in range(addr, addr + size):
            last_store[b] = (stores, addr, size)
if bin_bytes is not None and own == 0:
    sys.exit("no instruction of the program in the trace's middle: its loop is not there "
             "(start-up outweighs it); nothing counted")
print(f"loads {loads}, failing forwards {sum(fails.values())}")
for (at, size, spans), n in fails.most_common(12):
    print(f"  {at:#x}: {size}-byte load over stores of {spans} bytes, {n}x")
