/* Oclgrind 21.10: clFlush does not return while the queue holds a command that waits for an
 * incomplete user event (the spec's clFlush only issues commands; it must not block on them).
 * PoCL 3.1 and the Intel CPU runtime return at once.
 *
 *   gcc -O1 -o /tmp/flush repro/oclgrind_flush_waits_for_user_event.c -lOpenCL
 *   /tmp/flush <platform-substring>       (exit 0: returned; killed by timeout: the quirk)
 */
#include "common.h"

int main(int argc, char **argv) {
    cl_platform_id p;
    cl_device_id d;
    char name[256] = {0};
    if (!pick(argc, argv, &p, &d, name, sizeof name)) return 2;
    cl_int err;
    {
        cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
        cl_command_queue q = clCreateCommandQueue(ctx, d, 0, &err);
        cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &err);
        cl_event gate = clCreateUserEvent(ctx, &err);
        static char host[64];
        cl_event w;
        err = clEnqueueWriteBuffer(q, buf, CL_FALSE, 0, 64, host, 1, &gate, &w);
        printf("%s: clEnqueueWriteBuffer after an open user event: %d\n", name, err);
        fflush(stdout);
        err = clFlush(q);
        printf("%s: clFlush returned %d while the user event is open\n", name, err);
        clSetUserEventStatus(gate, CL_COMPLETE);
        clWaitForEvents(1, &w);
        clReleaseEvent(w);
        clReleaseEvent(gate);
        clReleaseMemObject(buf);
        clReleaseCommandQueue(q);
        clReleaseContext(ctx);
    }
    return 0;
}
