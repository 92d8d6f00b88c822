/* NVIDIA 580.159.04: clEnqueueMigrateMemObjects(CL_MIGRATE_MEM_OBJECT_HOST) of a list holding a
 * buffer and one of its sub-buffers fails with CL_INVALID_VALUE; the spec lists no such error.
 * The sequence of buffers::migration_keeps_contents: a buffer made from host data, a sub-buffer of
 * its second half, another buffer, all three migrated to the host as the first command. */
#include "common.h"

int main(int argc, char **argv) {
    cl_platform_id p; cl_device_id d; char name[256] = {0};
    if (!pick(argc, argv, &p, &d, name, sizeof name)) return 2;
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, d, NULL, &err);
    cl_uint align_bits = 0;
    clGetDeviceInfo(d, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL);
    size_t align = align_bits / 8 ? align_bits / 8 : 128;
    char *init = calloc(2 * align, 1);
    static char other_init[100];
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, 2 * align, init, &err);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, 100, other_init, &err);
    cl_buffer_region r = {align, align};
    cl_mem sub = clCreateSubBuffer(a, 0, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
    cl_mem three[3] = {a, sub, b};
    cl_int host3 = clEnqueueMigrateMemObjects(q, 3, three, CL_MIGRATE_MEM_OBJECT_HOST, 0, NULL, NULL);
    cl_mem two[2] = {a, sub};
    cl_int host2 = clEnqueueMigrateMemObjects(q, 2, two, CL_MIGRATE_MEM_OBJECT_HOST, 0, NULL, NULL);
    cl_int parent = clEnqueueMigrateMemObjects(q, 1, &a, CL_MIGRATE_MEM_OBJECT_HOST, 0, NULL, NULL);
    cl_int zero = clEnqueueMigrateMemObjects(q, 2, two, 0, 0, NULL, NULL);
    clFinish(q);
    printf("to host: buffer + sub-buffer + other %d, buffer + sub-buffer %d, buffer alone %d; flags 0: %d\n%s\n",
           host3, host2, parent, zero, host3 == CL_SUCCESS && host2 == CL_SUCCESS ? "spec behaviour" : "QUIRK REPRODUCED");
    free(init);
    return 0;
}
