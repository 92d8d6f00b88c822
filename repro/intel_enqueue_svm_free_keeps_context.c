/* The Intel CPU runtime 2026.22.10 never destroys a context in which clEnqueueSVMFree ran: its
 * clSetContextDestructorCallback callback does not run after every handle was released (mode 2),
 * while clSVMFree (mode 1) or no SVM (mode 0) let it run; the process then aborts at exit with
 * "Pure virtual function called!". PoCL 3.1 runs the callback in all three modes.
 *
 *   gcc -O1 -o /tmp/svmctx repro/intel_enqueue_svm_free_keeps_context.c -lOpenCL && /tmp/svmctx Intel
 */
#include "common.h"
#include <time.h>
static void CL_CALLBACK gone(cl_context c, void *u) { *(int *)u = 1; }
int main(int argc, char **argv) {
    cl_platform_id p; cl_device_id d; char name[256] = {0};
    if (!pick(argc, argv, &p, &d, name, sizeof name)) return 2;
    for (int mode = 0; mode < 3; mode++) {
        cl_int err; int flag = 0;
        cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
        CHECK(clSetContextDestructorCallback(ctx, gone, &flag));
        cl_command_queue q = clCreateCommandQueueWithProperties(ctx, d, NULL, &err);
        if (mode > 0) {
            void *s = clSVMAlloc(ctx, CL_MEM_READ_WRITE, 4096, 0);
            if (mode == 1) clSVMFree(ctx, s);
            else { CHECK(clEnqueueSVMFree(q, 1, &s, NULL, NULL, 0, NULL, NULL)); clFinish(q); }
        }
        clReleaseCommandQueue(q);
        clReleaseContext(ctx);
        for (int i = 0; i < 100 && !flag; i++) { struct timespec ts = {0, 10000000}; nanosleep(&ts, NULL); }
        printf("%s: mode %d (%s): destructor callback %s\n", name, mode, mode == 0 ? "no SVM" : mode == 1 ? "clSVMFree" : "clEnqueueSVMFree", flag ? "ran" : "NOT RUN after 1 s");
    }
    return 0;
}
