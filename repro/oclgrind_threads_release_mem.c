/* Oclgrind 21.10 (Debian oclgrind 21.10-3, OpenCL 1.2): two host threads, each with its own queue on
 * one shared context, create a buffer, write it (blocking), and release it, many times. Both the spec
 * (OpenCL 1.2 section A.2: all API calls are thread-safe except clSetKernelArg) and the other runtimes
 * allow it. Observed: SIGSEGV inside clReleaseMemObject (the crash ends the process).
 *
 *   gcc -O1 -pthread -o /tmp/oclgrind_release repro/oclgrind_threads_release_mem.c -lOpenCL
 *   /tmp/oclgrind_release <platform-substring> [threads] [rounds] [shared-context]
 *
 * shared-context 1 (default): one context for all threads; 0: a context per thread.
 * Prints `no crash` when every round ran.
 */
#include "common.h"
#include <pthread.h>

static cl_device_id dev;
static cl_context shared_ctx;
static int rounds = 500, shared = 1, blocking = 1;

static void *worker(void *arg) {
    long id = (long)arg;
    cl_int err;
    cl_context ctx = shared ? shared_ctx : clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    int data[256];
    for (int k = 0; k < 256; k++) data[k] = (int)id * 1000 + k;
    for (int r = 0; r < rounds; r++) {
        cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof data, NULL, &err);
        if (err != CL_SUCCESS) { printf("thread %ld: clCreateBuffer -> %d\n", id, err); break; }
        CHECK(clEnqueueWriteBuffer(q, b, blocking, 0, sizeof data, data, 0, NULL, NULL));
        CHECK(clReleaseMemObject(b));
    }
    clFinish(q);
    clReleaseCommandQueue(q);
    if (!shared) clReleaseContext(ctx);
    return NULL;
}

int main(int argc, char **argv) {
    cl_platform_id p;
    char name[256] = {0};
    if (!pick(argc, argv, &p, &dev, name, sizeof name)) return 2;
    int threads = argc > 2 ? atoi(argv[2]) : 2;
    if (argc > 3) rounds = atoi(argv[3]);
    if (argc > 4) shared = atoi(argv[4]);
    if (argc > 5) blocking = atoi(argv[5]);
    if (threads < 1 || threads > 64) threads = 2;
    cl_int err;
    shared_ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    printf("%s: %d threads x %d rounds of create/write/release, %s context\n", name, threads, rounds,
           shared ? "one shared" : "a per-thread");
    fflush(stdout);
    pthread_t t[64];
    for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    clReleaseContext(shared_ctx);
    printf("%s: no crash\n", name);
    return 0;
}
