/* PoCL 3.1 (Debian pocl-opencl-icd 3.1-3+deb12u1, CPU device): in a context over two
 * sub-devices (clCreateSubDevices, CL_DEVICE_PARTITION_EQUALLY), clEnqueueWriteImage on a queue
 * of one sub-device aborts the process:
 *   ./lib/CL/clEnqueueWriteImage.c:46: POclEnqueueWriteImage:
 *   Assertion `dev_i < image->context->num_devices' failed.   (SIGABRT)
 * Buffers in the same context work (write, kernels, read). The Intel CPU runtime writes the image.
 *
 *   gcc -O1 -o /tmp/subimg repro/pocl_subdevice_image_write_abort.c -lOpenCL
 *   /tmp/subimg <platform-substring>
 */
#include "common.h"

int main(int argc, char **argv) {
    cl_platform_id p;
    cl_device_id d;
    char name[256] = {0};
    if (!pick(argc, argv, &p, &d, name, sizeof name)) return 2;
    cl_int err;
    cl_uint units = 0;
    clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    cl_device_partition_property props[] = {CL_DEVICE_PARTITION_EQUALLY, units / 2 ? units / 2 : 1, 0};
    cl_device_id subs[64];
    cl_uint n = 0;
    err = clCreateSubDevices(d, props, 64, subs, &n);
    printf("%s: clCreateSubDevices = %d, %u sub-devices\n", name, err, n);
    if (err != CL_SUCCESS || n < 2) return 2;
    cl_context ctx = clCreateContext(NULL, 2, subs, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueue(ctx, subs[0], 0, &err);
    cl_image_format fmt = {CL_R, CL_UNSIGNED_INT32};
    cl_image_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.image_type = CL_MEM_OBJECT_IMAGE2D;
    desc.image_width = 8;
    desc.image_height = 4;
    cl_mem img = clCreateImage(ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &err);
    printf("%s: clCreateImage = %d\n", name, err);
    fflush(stdout);
    cl_uint data[32];
    for (int k = 0; k < 32; k++) data[k] = k;
    size_t origin[3] = {0, 0, 0}, region[3] = {8, 4, 1};
    err = clEnqueueWriteImage(q, img, CL_TRUE, origin, region, 0, 0, data, 0, NULL, NULL);
    printf("%s: clEnqueueWriteImage = %d (QUIRK NOT REPRODUCED)\n", name, err);
    clReleaseMemObject(img);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    for (cl_uint k = 0; k < n; k++) clReleaseDevice(subs[k]);
    return 0;
}
