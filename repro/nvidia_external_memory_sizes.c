/* NVIDIA 580.159.04, H100: `cuda_interop` (cl-mem's example) stops with a segmentation fault while
 * setting up a 1 GiB buffer shared with CUDA, after 1 and 64 MiB worked. This program takes the
 * same steps in plain C, printing after each one, at 64 MiB, 256 MiB, 512 MiB, 1 GiB and 2 GiB:
 * cuMemCreate (POSIX fd handle type), cuMemAddressReserve + cuMemMap + cuMemSetAccess,
 * cuMemExportToShareableHandle, clCreateBufferWithProperties(CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR),
 * clEnqueueAcquireExternalMemObjectsKHR, a plain clCreateBuffer of the same size, cuMemsetD32,
 * clEnqueueReadBuffer of the last word, release, free. libcuda is opened at run time (no CUDA
 * headers here), with the few types it needs declared below as in cuda.h (CUDA 12). */
#include "common.h"
#include <dlfcn.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct { int type; int id; } CUmemLocation;
typedef struct {
    int type;                 /* CU_MEM_ALLOCATION_TYPE_PINNED = 1 */
    int requestedHandleTypes; /* CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1 */
    CUmemLocation location;   /* CU_MEM_LOCATION_TYPE_DEVICE = 1 */
    void *win32HandleMetaData;
    struct { unsigned char compressionType, gpuDirectRDMACapable; unsigned short usage; unsigned char reserved[4]; } allocFlags;
} CUmemAllocationProp;
typedef struct { CUmemLocation location; int flags; /* PROT_READWRITE = 3 */ } CUmemAccessDesc;

#define CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR 0x2060
typedef cl_int (*acq_fn)(cl_command_queue, cl_uint, const cl_mem *, cl_uint, const cl_event *, cl_event *);

static void *cu;
#define CU(name, ...)                                                                 \
    do {                                                                              \
        CUresult (*f_)() = (CUresult(*)())dlsym(cu, #name);                           \
        CUresult r_ = f_ ? f_(__VA_ARGS__) : -1;                                      \
        printf("  %s -> %d\n", #name, r_); fflush(stdout);                            \
        if (r_) return 1;                                                             \
    } while (0)

static int one(cl_platform_id p, cl_context ctx, cl_command_queue q, size_t mib) {
    size_t bytes = mib << 20;
    printf("[%zu MiB]\n", mib); fflush(stdout);
    CUmemAllocationProp prop; memset(&prop, 0, sizeof prop);
    prop.type = 1; prop.requestedHandleTypes = 1; prop.location.type = 1; prop.location.id = 0;
    size_t gran = 0;
    CU(cuMemGetAllocationGranularity, &gran, &prop, 0);
    size_t size = (bytes + gran - 1) / gran * gran;
    CUmemGenericAllocationHandle h = 0;
    CU(cuMemCreate, &h, size, &prop, 0ULL);
    CUdeviceptr ptr = 0;
    CU(cuMemAddressReserve, &ptr, size, (size_t)0, (CUdeviceptr)0, 0ULL);
    CU(cuMemMap, ptr, size, (size_t)0, h, 0ULL);
    CUmemAccessDesc acc = {{1, 0}, 3};
    CU(cuMemSetAccess, ptr, size, &acc, (size_t)1);
    int fd = -1;
    CU(cuMemExportToShareableHandle, (void *)&fd, h, 1, 0ULL);
    cl_mem_properties props[] = {CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR, (cl_mem_properties)fd, 0};
    cl_int err;
    cl_mem ext = clCreateBufferWithProperties(ctx, props, CL_MEM_READ_WRITE, size, NULL, &err);
    printf("  clCreateBufferWithProperties(%zu bytes) -> %d\n", size, err); fflush(stdout);
    if (err) return 1;
    acq_fn acquire = (acq_fn)clGetExtensionFunctionAddressForPlatform(p, "clEnqueueAcquireExternalMemObjectsKHR");
    acq_fn release = (acq_fn)clGetExtensionFunctionAddressForPlatform(p, "clEnqueueReleaseExternalMemObjectsKHR");
    err = acquire(q, 1, &ext, 0, NULL, NULL);
    printf("  clEnqueueAcquireExternalMemObjectsKHR -> %d\n", err); fflush(stdout);
    CHECK(clFinish(q));
    cl_mem plain = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    printf("  clCreateBuffer(%zu bytes) -> %d\n", bytes, err); fflush(stdout);
    err = release(q, 1, &ext, 0, NULL, NULL);
    printf("  clEnqueueReleaseExternalMemObjectsKHR -> %d\n", err); fflush(stdout);
    CHECK(clFinish(q));
    CU(cuMemsetD32_v2, ptr, 7u, bytes / 4);
    CU(cuCtxSynchronize);
    CHECK(acquire(q, 1, &ext, 0, NULL, NULL));
    cl_uint last = 0;
    CHECK(clEnqueueReadBuffer(q, ext, CL_TRUE, bytes - 4, 4, &last, 0, NULL, NULL));
    printf("  last word read by OpenCL: %u (CUDA wrote 7)\n", last); fflush(stdout);
    CHECK(release(q, 1, &ext, 0, NULL, NULL));
    CHECK(clFinish(q));
    CHECK(clReleaseMemObject(plain));
    CHECK(clReleaseMemObject(ext));
    CU(cuMemUnmap, ptr, size);
    CU(cuMemAddressFree, ptr, size);
    CU(cuMemRelease, h);
    printf("  done\n"); fflush(stdout);
    return 0;
}

int main(int argc, char **argv) {
    cl_platform_id p; cl_device_id d; char name[256] = {0};
    if (!pick(argc, argv, &p, &d, name, sizeof name)) return 2;
    cu = dlopen("libcuda.so.1", RTLD_NOW);
    if (!cu) { printf("no libcuda: %s\n", dlerror()); return 2; }
    int dev = 0; void *cuctx = NULL;
    CU(cuInit, 0u);
    CU(cuDeviceGet, &dev, 0);
    CU(cuDevicePrimaryCtxRetain, &cuctx, dev);
    CU(cuCtxSetCurrent, cuctx);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, d, NULL, &err);
    size_t sizes[] = {64, 256, 512, 1024, 2048};
    for (int i = 0; i < 5; i++)
        if (one(p, ctx, q, sizes[i])) { printf("stopped at %zu MiB\n", sizes[i]); break; }
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    printf("finished\n");
    return 0;
}
