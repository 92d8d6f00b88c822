/* PoCL 3.1: a user event set to an error while two host threads wait (clWaitForEvents) on
 * commands that depend on it aborts the process in pocl_update_event_failed (EINVAL) or hangs:
 * 4 of 6 runs aborted with malloc'd host memory and 6 of 6 with mapped pinned memory in a
 * review of the staged transfers (2026-11-26); here 1 of 3 runs aborted and 2 hung. cl-mem
 * refuses commands after an already failed event; a failure that arrives while several threads
 * wait cannot be refused and is left to the driver (docs/DEVICES.md#pocl-failed-wait-events).
 *
 *   gcc -O1 -pthread -o /tmp/ue_abort repro/pocl_user_event_error_two_threads_abort.c -lOpenCL
 *   timeout 60 /tmp/ue_abort Portable [threads=2] [reps=5] [pinned=0|1]  (abort or timeout: the quirk)
 */
#include "common.h"
#include <pthread.h>
#include <unistd.h>
static cl_event user; static cl_command_queue q; static cl_mem buf; static cl_context ctx;
static pthread_mutex_t lk = PTHREAD_MUTEX_INITIALIZER;
static int pinned = 0, depth = 2;
static void *worker(void *a) {
    long t = (long)a; cl_int err; char *host[8]; cl_mem pm[8];
    for (int s = 0; s < depth; s++) {
        if (pinned) {
            pm[s] = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, 4096, NULL, &err);
            host[s] = clEnqueueMapBuffer(q, pm[s], CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, 4096, 0, NULL, NULL, &err);
        } else host[s] = malloc(4096);
    }
    cl_event ev[8];
    for (int s = 0; s < depth; s++) {
        pthread_mutex_lock(&lk);
        CHECK(clEnqueueWriteBuffer(q, buf, CL_FALSE, (t * depth + s) * 4096, 4096, host[s], 1, &user, &ev[s]));
        pthread_mutex_unlock(&lk);
    }
    err = clWaitForEvents(1, &ev[0]);
    for (int s = 0; s < depth; s++) { clWaitForEvents(1, &ev[s]); clReleaseEvent(ev[s]); }
    return (void *)(long)err;
}
int main(int argc, char **argv) {
    cl_platform_id p; cl_device_id d; char name[256];
    if (!pick(argc, argv, &p, &d, name, sizeof name)) return 1;
    int nt = argc > 2 ? atoi(argv[2]) : 2;
    int reps = argc > 3 ? atoi(argv[3]) : 5;
    pinned = argc > 4 ? atoi(argv[4]) : 0;
    cl_int err;
    ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    q = clCreateCommandQueue(ctx, d, 0, &err);
    buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 1 << 20, NULL, &err);
    for (int r = 0; r < reps; r++) {
        user = clCreateUserEvent(ctx, &err);
        pthread_t t[16];
        for (long i = 0; i < nt; i++) pthread_create(&t[i], NULL, worker, (void *)i);
        usleep(100000);
        CHECK(clSetUserEventStatus(user, CL_OUT_OF_RESOURCES));
        for (int i = 0; i < nt; i++) { void *rv; pthread_join(t[i], &rv); if (i == 0) printf("rep %d worker0 wait -> %ld\n", r, (long)rv); }
        clReleaseEvent(user);
    }
    printf("done\n");
    return 0;
}
