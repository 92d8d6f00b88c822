/* Two refusals around the default device queue (OpenCL 2.1 CL_QUEUE_DEVICE_DEFAULT):
 * - PoCL 3.1 (OpenCL 3.0 device): clGetDeviceInfo(CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES), a 3.0
 *   query, returns CL_INVALID_VALUE;
 * - Intel CPU runtime 3.1: the device reports device-side enqueue, yet
 *   clGetCommandQueueInfo(CL_QUEUE_DEVICE_DEFAULT) on a host queue returns CL_INVALID_VALUE (the
 *   spec: the current default device queue, NULL when there is none). */
#include "common.h"

int main(int argc, char **argv) {
    cl_platform_id p; cl_device_id d; char name[256] = {0};
    if (!pick(argc, argv, &p, &d, name, sizeof name)) return 2;
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, d, NULL, &err);
    cl_bitfield caps = 0;
    cl_int e1 = clGetDeviceInfo(d, 0x1070 /* CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES */, sizeof caps, &caps, NULL);
    cl_command_queue def = NULL;
    cl_int e2 = clGetCommandQueueInfo(q, CL_QUEUE_DEVICE_DEFAULT, sizeof def, &def, NULL);
    printf("CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES: status %d, value %#llx; CL_QUEUE_DEVICE_DEFAULT: status %d, value %p\n",
           e1, (unsigned long long)caps, e2, (void *)def);
    printf("%s\n", e1 == CL_SUCCESS && (e2 == CL_SUCCESS || caps == 0) ? "spec behaviour" : "QUIRK REPRODUCED");
    return 0;
}
