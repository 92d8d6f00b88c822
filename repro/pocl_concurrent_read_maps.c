/* PoCL 3.1 (Debian pocl-opencl-icd 3.1-3+deb12u1, CPU device): two host threads, each with its own
 * in-order queue on one context, map the same buffer read-only (blocking clEnqueueMapBuffer of the
 * whole buffer, CL_MAP_READ), check the mapped bytes, and unmap, many times. The spec allows any
 * number of concurrent read maps of one buffer and API calls from several host threads. Reported
 * symptoms: a crash inside pocl_driver_map_mem, or a mapped pointer whose bytes are not the buffer's.
 *
 *   gcc -O1 -pthread -o /tmp/pocl_maps repro/pocl_concurrent_read_maps.c -lOpenCL
 *   /tmp/pocl_maps <platform-substring> [threads] [rounds] [lock]
 *
 * lock (what a library could do about it): 0 none (default); 1 one mutex per buffer held around each
 * clEnqueueMapBuffer and each clEnqueueUnmapMemObject call; 2 that mutex held from the map call until
 * the unmap completed (one map of the buffer at a time); 3 as 1, but non-blocking maps, waited for
 * after the mutex is released (so the maps' commands may run at the same time); 4 as 3, and each map
 * and unmap command also waits for the buffer's previous map or unmap command (whatever its queue),
 * so no two of them run at the same time: what cl-mem does.
 *
 * Prints `QUIRK REPRODUCED` when a map fails or returns wrong bytes (a crash ends the process with
 * SIGSEGV / SIGABRT instead), `no fault` otherwise.
 */
#include "common.h"
#include <pthread.h>

#define N 4096 /* ints: 16 KiB */

static cl_context ctx;
static cl_device_id dev;
static cl_mem buf;
static int rounds = 2000;
static volatile int bad = 0;
static int lock_mode = 0;
static pthread_mutex_t buf_lock = PTHREAD_MUTEX_INITIALIZER;
static cl_event last = NULL; /* mode 4: the buffer's last map or unmap command, under buf_lock */

/* mode 4: the wait list (the last map or unmap command) and the new last command. */
static cl_uint after_last(cl_event *list) {
    if (lock_mode != 4 || !last) return 0;
    list[0] = last;
    return 1;
}
static void set_last(cl_command_queue q, cl_event ev) {
    if (lock_mode != 4) return;
    if (last) clReleaseEvent(last);
    clRetainEvent(ev);
    last = ev;
    clFlush(q); /* another queue may wait for it next (the spec's clFlush rule) */
}

static void *worker(void *arg) {
    long id = (long)arg;
    cl_int err;
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    if (err != CL_SUCCESS) { printf("thread %ld: clCreateCommandQueue -> %d\n", id, err); bad = 1; return NULL; }
    for (int r = 0; r < rounds && !bad; r++) {
        if (lock_mode) pthread_mutex_lock(&buf_lock);
        cl_event ev = NULL, wl[1];
        int nb = lock_mode >= 3;
        cl_uint nw = after_last(wl);
        cl_int *p = clEnqueueMapBuffer(q, buf, nb ? CL_FALSE : CL_TRUE, CL_MAP_READ, 0, N * sizeof(cl_int), nw,
                                       nw ? wl : NULL, nb ? &ev : NULL, &err);
        if (ev) set_last(q, ev);
        if (err != CL_SUCCESS || !p) {
            printf("thread %ld round %d: clEnqueueMapBuffer -> %d, ptr %p\n", id, r, err, (void *)p);
            bad = 1;
            if (lock_mode) pthread_mutex_unlock(&buf_lock);
            break;
        }
        if (lock_mode == 1 || lock_mode >= 3) pthread_mutex_unlock(&buf_lock);
        if (ev) { clWaitForEvents(1, &ev); clReleaseEvent(ev); }
        for (int k = 0; k < N; k += 97) {
            if (p[k] != k * 3 + 1) {
                printf("thread %ld round %d: mapped[%d] = %d, expected %d (ptr %p)\n", id, r, k, p[k], k * 3 + 1, (void *)p);
                bad = 1;
                break;
            }
        }
        if (lock_mode == 1 || lock_mode >= 3) pthread_mutex_lock(&buf_lock);
        cl_event uev = NULL;
        nw = after_last(wl);
        err = clEnqueueUnmapMemObject(q, buf, p, nw, nw ? wl : NULL, lock_mode == 4 ? &uev : NULL);
        if (uev) { set_last(q, uev); clReleaseEvent(uev); }
        if (err != CL_SUCCESS) { printf("thread %ld: clEnqueueUnmapMemObject -> %d\n", id, err); bad = 1; }
        if (lock_mode == 1 || lock_mode >= 3) pthread_mutex_unlock(&buf_lock);
        clFinish(q);
        if (lock_mode == 2) pthread_mutex_unlock(&buf_lock);
    }
    clReleaseCommandQueue(q);
    return NULL;
}

int main(int argc, char **argv) {
    cl_platform_id p;
    char name[256] = {0};
    if (!pick(argc, argv, &p, &dev, name, sizeof name)) return 2;
    int threads = argc > 2 ? atoi(argv[2]) : 2;
    if (argc > 3) rounds = atoi(argv[3]);
    if (argc > 4) lock_mode = atoi(argv[4]);
    if (threads < 1 || threads > 64) threads = 2;
    cl_int err;
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    static cl_int init[N];
    for (int k = 0; k < N; k++) init[k] = k * 3 + 1;
    buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof init, init, &err);
    printf("%s: %d threads x %d rounds of read maps of one %zu-byte buffer, lock mode %d\n", name, threads, rounds,
           sizeof init, lock_mode);
    fflush(stdout);
    pthread_t t[64];
    for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    if (last) clReleaseEvent(last);
    clReleaseMemObject(buf);
    clReleaseContext(ctx);
    printf("%s: %s\n", name, bad ? "QUIRK REPRODUCED" : "no fault");
    return 0;
}
