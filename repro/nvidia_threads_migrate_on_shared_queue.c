/* A check of a crash once reported on NVIDIA 580.159.04 (SIGSEGV in a thread of libnvidia-opencl
 * in about one run of three of pools::threads_share_a_device_pool): four host threads each creating
 * buffers, migrating them on one shared queue (as cl-pool's ImmediateAllocator forces an
 * allocation) and writing/reading them on a queue of its own. On 2026-11-23 it did not reproduce:
 * six runs of this program and six runs of the test (its NVIDIA skip disabled) on the H100 all
 * completed, so the test runs there again. Prints "no crash" when it survives.
 *
 *   gcc -O1 -pthread -o /tmp/thr repro/nvidia_threads_migrate_on_shared_queue.c -lOpenCL */
#include "common.h"
#include <pthread.h>

#define THREADS 4
#define ROUNDS 2000

static cl_context ctx;
static cl_device_id dev;
static cl_command_queue shared_q;

static void *worker(void *arg) {
    long t = (long)arg;
    cl_int err;
    cl_command_queue own = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    unsigned char data[256], back[256];
    for (int r = 0; r < ROUNDS; r++) {
        size_t n = 64 + ((r * 37 + t * 11) % 4) * 64;
        cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n, NULL, &err);
        if (err) { printf("thread %ld: clCreateBuffer %d\n", t, err); break; }
        cl_event ev;
        err = clEnqueueMigrateMemObjects(shared_q, 1, &b, CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED, 0, NULL, &ev);
        if (err) { printf("thread %ld: migrate %d\n", t, err); break; }
        clWaitForEvents(1, &ev);
        clReleaseEvent(ev);
        memset(data, (int)(t * 16 + r), n);
        clEnqueueWriteBuffer(own, b, CL_TRUE, 0, n, data, 0, NULL, NULL);
        clEnqueueReadBuffer(own, b, CL_TRUE, 0, n, back, 0, NULL, NULL);
        if (memcmp(data, back, n)) { printf("thread %ld: contents differ\n", t); break; }
        clReleaseMemObject(b);
    }
    clReleaseCommandQueue(own);
    return NULL;
}

int main(int argc, char **argv) {
    cl_platform_id p; char name[256] = {0};
    if (!pick(argc, argv, &p, &dev, name, sizeof name)) return 2;
    cl_int err;
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    shared_q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    clFinish(shared_q);
    printf("%d threads x %d rounds: no crash\n", THREADS, ROUNDS);
    return 0;
}
