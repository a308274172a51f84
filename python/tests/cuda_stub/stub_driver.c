/* A stand-in for the CUDA driver (libcuda.so.1) that runs on the host.
 *
 * Built with -Wl,-soname,libcuda.so.1 so that, once loaded with RTLD_GLOBAL,
 * it satisfies libmlir_cuda_runtime.so's dependency on the driver. It
 * implements every driver function that library calls: device memory is
 * host memory, streams, events and contexts are dummies, and kernels are
 * never run. What tests need to see is recorded instead: each launch (kernel,
 * grid, block, shared memory, parameters), the kind of the last module image,
 * allocations and bytes copied. The stub_* functions at the end read them.
 *
 * Like the real driver, cuInit registers an exit handler that shuts the
 * driver down: atexit handlers run before library destructors, so a module
 * unloaded by a library destructor at exit gets CUDA_ERROR_DEINITIALIZED
 * (on an H100 the MLIR runtime then printed "'cuModuleUnload(module)'
 * failed with '<unknown>'" for each kernel module).
 *
 * Knobs for testing the caller's error paths (read by cuInit):
 *   STUB_CUDA_INIT_ERROR=<code>  cuInit returns that CUresult
 *   STUB_CUDA_DEVICE_COUNT=<n>   cuDeviceGetCount reports n devices (default 1)
 *   STUB_CUDA_FAULT=<code>       the first kernel launched "faults": like a real
 *                                kernel error (an illegal address), the error is
 *                                sticky: stream and context synchronization and
 *                                copies return that CUresult from then on
 *   STUB_CUDA_MEMORY=<bytes>     the device's memory: an allocation that would
 *                                hold more at once gets CUDA_ERROR_OUT_OF_MEMORY
 */

#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUevent;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
};

/* Kinds of module image; stub_image_kind() returns one. */
enum { IMAGE_NONE = 0, IMAGE_PTX = 1, IMAGE_FATBIN = 2, IMAGE_CUBIN = 3, IMAGE_UNKNOWN = 4 };

#define STUB_MAX_NAME 256
#define STUB_MAX_PARAMS 512 /* the classic 4 KiB limit of kernel parameters / 8 */

/* One recorded launch; stub.py mirrors this layout. */
struct stub_launch {
  char kernel[STUB_MAX_NAME];
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;
  int image_kind;
  int param_count; /* -1: unknown (the image is not PTX) */
  int param_sizes[STUB_MAX_PARAMS];
  /* The first 8 bytes of each parameter of at most 8 bytes (pointers, sizes,
   * strides), zero-extended: lets tests check which buffers a kernel got. */
  unsigned long long param_values[STUB_MAX_PARAMS];
  /* 1 where an 8-byte parameter pointed into a live device allocation. */
  unsigned char param_on_device[STUB_MAX_PARAMS];
};

/* Memory and copy counters; stub.py mirrors this layout. */
struct stub_counters {
  long long allocations, frees, bytes_allocated, bytes_freed, live_bytes;
  long long host_to_device, device_to_host, device_to_device, host_to_host;
  long long modules_loaded, modules_unloaded;
};

struct module {
  int kind;
  char *image; /* a copy: the caller may free its buffer after loading */
  size_t size;
};

struct function {
  int image_kind; /* kept here: the module may be unloaded first */
  char name[STUB_MAX_NAME];
  int param_count;
  int param_sizes[STUB_MAX_PARAMS];
};

struct allocation {
  uintptr_t base;
  size_t size;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct stub_launch *launches;
static size_t launch_count, launch_capacity;
static struct allocation *allocations;
static size_t allocation_count, allocation_capacity;
static struct stub_counters counters;
static int last_image_kind = IMAGE_NONE;
static int initialized;
static int shut_down; /* by the exit handler cuInit registers */
static int fault_code; /* STUB_CUDA_FAULT */
static int faulted;    /* a launch "faulted": fault_code is sticky */
static int device_count = 1;
static long long memory_limit; /* STUB_CUDA_MEMORY; 0: unlimited */
static int dummy_object; /* contexts, streams and events point here */

/* ---- module images ---------------------------------------------------- */

static int image_kind(const unsigned char *data) {
  static const unsigned char fatbin_magic[4] = {0x50, 0xED, 0x55, 0xBA};
  if (!memcmp(data, fatbin_magic, 4))
    return IMAGE_FATBIN;
  if (!memcmp(data, "\x7f" "ELF", 4))
    return IMAGE_CUBIN;
  const char *text = (const char *)data;
  while (isspace((unsigned char)*text))
    text++;
  if (!strncmp(text, "//", 2) || !strncmp(text, ".version", 8))
    return IMAGE_PTX;
  return IMAGE_UNKNOWN;
}

/* How many bytes the image spans, from its own headers (the driver API
 * passes no size). */
static size_t image_size(const unsigned char *data, int kind) {
  if (kind == IMAGE_FATBIN) { /* u32 magic, u16 version, u16 header size, u64 body */
    uint16_t header;
    uint64_t body;
    memcpy(&header, data + 6, 2);
    memcpy(&body, data + 8, 8);
    return header + body;
  }
  if (kind == IMAGE_CUBIN) { /* 64-bit ELF: section headers come last */
    uint64_t shoff;
    uint16_t shentsize, shnum;
    memcpy(&shoff, data + 0x28, 8);
    memcpy(&shentsize, data + 0x3a, 2);
    memcpy(&shnum, data + 0x3c, 2);
    return shoff + (uint64_t)shentsize * shnum;
  }
  return strlen((const char *)data) + 1;
}

/* ---- PTX kernel signatures --------------------------------------------- */

/* The `.entry NAME` declaration in the PTX text, or NULL. Points after NAME. */
static const char *find_entry(const char *ptx, const char *name) {
  size_t length = strlen(name);
  for (const char *p = strstr(ptx, ".entry"); p; p = strstr(p + 1, ".entry")) {
    const char *q = p + 6;
    if (!isspace((unsigned char)*q))
      continue;
    while (isspace((unsigned char)*q))
      q++;
    if (!strncmp(q, name, length) && (q[length] == '(' || isspace((unsigned char)q[length])))
      return q + length;
  }
  return NULL;
}

/* Bytes of one `.param` declaration: `.param .u64 .ptr .align 1 p`,
 * `.param .align 8 .b8 p[16]`, ... Its element type is the one
 * `.b/.u/.s/.f<bits>` token; each `[N]` multiplies. */
static int param_size(const char *decl, const char *end) {
  int element = 0, count = 1;
  for (const char *p = decl; p < end; p++) {
    if (*p == '.' && strchr("busf", p[1]) && isdigit((unsigned char)p[2]) &&
        (p == decl || isspace((unsigned char)p[-1])))
      element = atoi(p + 2) / 8;
    else if (*p == '[')
      count *= atoi(p + 1);
  }
  return element * count;
}

/* Fill in the parameter sizes of kernel `name` from PTX text. Returns the
 * parameter count, or -1 when the entry is absent. */
static int ptx_signature(const char *ptx, const char *name, int *sizes) {
  const char *p = find_entry(ptx, name);
  if (!p)
    return -1;
  while (isspace((unsigned char)*p))
    p++;
  if (*p != '(')
    return 0; /* `.entry NAME {`: no parameters */
  const char *close = strchr(p, ')');
  if (!close)
    return -1;
  int count = 0;
  for (const char *decl = p + 1; decl < close;) {
    const char *end = memchr(decl, ',', close - decl);
    if (!end)
      end = close;
    if (strstr(decl, ".param") && strstr(decl, ".param") < end) {
      if (count < STUB_MAX_PARAMS)
        sizes[count] = param_size(decl, end);
      count++;
    }
    decl = end + 1;
  }
  return count;
}

/* ---- bookkeeping helpers ----------------------------------------------- */

static void *grow(void *array, size_t *capacity, size_t needed, size_t element) {
  if (needed <= *capacity)
    return array;
  size_t capacity2 = *capacity ? *capacity * 2 : 16;
  while (capacity2 < needed)
    capacity2 *= 2;
  void *array2 = realloc(array, capacity2 * element);
  if (array2)
    *capacity = capacity2;
  return array2;
}

/* Index of the allocation holding address `p`, or -1 (host memory). */
static long find_allocation(uintptr_t p) {
  for (size_t i = 0; i < allocation_count; i++)
    if (p >= allocations[i].base && p < allocations[i].base + allocations[i].size)
      return (long)i;
  return -1;
}

static CUresult allocate(CUdeviceptr *out, size_t size) {
  if (!out)
    return CUDA_ERROR_INVALID_VALUE;
  /* Real device allocations are at least 256-byte aligned; code may rely on it. */
  size_t rounded = size ? (size + 255) / 256 * 256 : 256;
  void *p = aligned_alloc(256, rounded);
  if (!p)
    return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&lock);
  struct allocation *grown = grow(allocations, &allocation_capacity, allocation_count + 1,
                                  sizeof *allocations);
  if (grown)
    allocations = grown; /* realloc may have moved it */
  if (!grown || (memory_limit && counters.live_bytes + (long long)size > memory_limit)) {
    pthread_mutex_unlock(&lock);
    free(p);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  allocations[allocation_count++] = (struct allocation){(uintptr_t)p, size};
  counters.allocations++;
  counters.bytes_allocated += size;
  counters.live_bytes += size;
  pthread_mutex_unlock(&lock);
  *out = (CUdeviceptr)(uintptr_t)p;
  return CUDA_SUCCESS;
}

static CUresult copy(CUdeviceptr dst, CUdeviceptr src, size_t size) {
  if (size && (!dst || !src))
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&lock);
  int to_device = find_allocation(dst) >= 0, from_device = find_allocation(src) >= 0;
  long long *counter = to_device ? (from_device ? &counters.device_to_device
                                                : &counters.host_to_device)
                                 : (from_device ? &counters.device_to_host
                                                : &counters.host_to_host);
  *counter += size;
  pthread_mutex_unlock(&lock);
  memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, size);
  return CUDA_SUCCESS;
}

/* ---- initialization, devices, contexts ---------------------------------- */

static void shut_down_at_exit(void) { shut_down = 1; }

CUresult cuInit(unsigned flags) {
  (void)flags;
  const char *error = getenv("STUB_CUDA_INIT_ERROR");
  if (error && atoi(error))
    return atoi(error);
  static int registered;
  if (!registered) {
    atexit(shut_down_at_exit);
    registered = 1;
  }
  const char *fault = getenv("STUB_CUDA_FAULT");
  fault_code = fault ? atoi(fault) : 0;
  const char *count = getenv("STUB_CUDA_DEVICE_COUNT");
  device_count = count ? atoi(count) : 1;
  const char *memory = getenv("STUB_CUDA_MEMORY");
  memory_limit = memory ? atoll(memory) : 0;
  initialized = 1;
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *version) {
  if (!version)
    return CUDA_ERROR_INVALID_VALUE;
  *version = 13000;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
  if (!count)
    return CUDA_ERROR_INVALID_VALUE;
  if (!initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  *count = device_count;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  if (!device)
    return CUDA_ERROR_INVALID_VALUE;
  if (!initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (ordinal < 0 || ordinal >= device_count)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

/* An H100-like device (sm_90): enough for code that sizes launches from it. */
CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice device) {
  if (!value)
    return CUDA_ERROR_INVALID_VALUE;
  if (device < 0 || device >= device_count)
    return CUDA_ERROR_INVALID_DEVICE;
  switch (attribute) {
  case 1: /* MAX_THREADS_PER_BLOCK */
  case 2: /* MAX_BLOCK_DIM_X */
  case 3: /* MAX_BLOCK_DIM_Y */
    *value = 1024;
    break;
  case 4: /* MAX_BLOCK_DIM_Z */
    *value = 64;
    break;
  case 5: /* MAX_GRID_DIM_X */
    *value = 2147483647;
    break;
  case 6: /* MAX_GRID_DIM_Y */
  case 7: /* MAX_GRID_DIM_Z */
    *value = 65535;
    break;
  case 8: /* MAX_SHARED_MEMORY_PER_BLOCK */
    *value = 49152;
    break;
  case 10: /* WARP_SIZE */
    *value = 32;
    break;
  case 16: /* MULTIPROCESSOR_COUNT */
    *value = 132;
    break;
  case 75: /* COMPUTE_CAPABILITY_MAJOR */
    *value = 9;
    break;
  case 97: /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
    *value = 232448;
    break;
  default:
    *value = 0;
  }
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
  if (!context)
    return CUDA_ERROR_INVALID_VALUE;
  if (!initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (device < 0 || device >= device_count)
    return CUDA_ERROR_INVALID_DEVICE;
  *context = &dummy_object;
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext context) {
  return context ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuCtxPopCurrent_v2(CUcontext *context) {
  if (context)
    *context = &dummy_object;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
  static const struct {
    CUresult code;
    const char *name;
  } names[] = {
      {CUDA_SUCCESS, "CUDA_SUCCESS"},
      {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
      {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY"},
      {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED"},
      {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED"},
      {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE"},
      {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE"},
      {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE"},
      {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE"},
      {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND"},
  };
  if (!name)
    return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (names[i].code == error) {
      *name = names[i].name;
      return CUDA_SUCCESS;
    }
  *name = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

/* ---- modules and functions ---------------------------------------------- */

CUresult cuModuleLoadData(void **module, const void *image) {
  if (!module || !image)
    return CUDA_ERROR_INVALID_VALUE;
  if (!initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  int kind = image_kind(image);
  pthread_mutex_lock(&lock);
  last_image_kind = kind;
  pthread_mutex_unlock(&lock);
  if (kind == IMAGE_UNKNOWN)
    return CUDA_ERROR_INVALID_IMAGE;
  struct module *m = calloc(1, sizeof *m);
  if (!m)
    return CUDA_ERROR_OUT_OF_MEMORY;
  m->kind = kind;
  m->size = image_size(image, kind);
  m->image = malloc(m->size ? m->size : 1);
  if (!m->image) {
    free(m);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  memcpy(m->image, image, m->size);
  pthread_mutex_lock(&lock);
  counters.modules_loaded++;
  pthread_mutex_unlock(&lock);
  *module = m;
  return CUDA_SUCCESS;
}

/* JIT options (error log, optimization level) change nothing here. */
CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned count, void *options,
                            void **values) {
  (void)count, (void)options, (void)values;
  return cuModuleLoadData(module, image);
}

CUresult cuModuleUnload(void *module) {
  struct module *m = module;
  if (!m)
    return CUDA_ERROR_INVALID_HANDLE;
  if (shut_down)
    return CUDA_ERROR_DEINITIALIZED;
  pthread_mutex_lock(&lock);
  counters.modules_unloaded++;
  pthread_mutex_unlock(&lock);
  free(m->image);
  free(m);
  return CUDA_SUCCESS;
}

/* Functions are never freed, like the driver's (they die with the module). */
CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  struct module *m = module;
  if (!function || !name)
    return CUDA_ERROR_INVALID_VALUE;
  if (!m)
    return CUDA_ERROR_INVALID_HANDLE;
  if (strlen(name) >= STUB_MAX_NAME)
    return CUDA_ERROR_INVALID_VALUE;
  struct function *f = calloc(1, sizeof *f);
  if (!f)
    return CUDA_ERROR_OUT_OF_MEMORY;
  f->image_kind = m->kind;
  strcpy(f->name, name);
  f->param_count = -1; /* a cubin's signature is not read */
  if (m->kind == IMAGE_PTX) {
    f->param_count = ptx_signature(m->image, name, f->param_sizes);
    if (f->param_count < 0) {
      free(f);
      return CUDA_ERROR_NOT_FOUND;
    }
  }
  *function = f;
  return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(void *function, int attribute, int value) {
  (void)attribute, (void)value;
  return function ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* ---- launches ----------------------------------------------------------- */

static CUresult record_launch(struct function *f, const unsigned grid[3], const unsigned block[3],
                              unsigned shared_bytes, void **params) {
  if (!f)
    return CUDA_ERROR_INVALID_HANDLE;
  struct stub_launch *r = calloc(1, sizeof *r);
  if (!r)
    return CUDA_ERROR_OUT_OF_MEMORY;
  strcpy(r->kernel, f->name);
  memcpy(r->grid, grid, sizeof r->grid);
  memcpy(r->block, block, sizeof r->block);
  r->shared_bytes = shared_bytes;
  r->image_kind = f->image_kind;
  r->param_count = f->param_count;
  int known = f->param_count < STUB_MAX_PARAMS ? f->param_count : STUB_MAX_PARAMS;
  if (known > 0 && !params) {
    free(r);
    return CUDA_ERROR_INVALID_VALUE; /* `extra`-style launches are not used by MLIR */
  }
  for (int i = 0; i < known; i++) {
    int size = f->param_sizes[i];
    r->param_sizes[i] = size;
    if (size > 0 && size <= 8)
      memcpy(&r->param_values[i], params[i], size);
  }
  pthread_mutex_lock(&lock);
  for (int i = 0; i < known; i++)
    r->param_on_device[i] = r->param_sizes[i] == 8 && find_allocation(r->param_values[i]) >= 0;
  struct stub_launch *grown = grow(launches, &launch_capacity, launch_count + 1, sizeof *launches);
  if (grown) {
    launches = grown;
    launches[launch_count++] = *r;
  }
  pthread_mutex_unlock(&lock);
  free(r);
  return grown ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared_bytes, CUstream stream,
                        void **params, void **extra) {
  (void)stream, (void)extra;
  const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  faulted = fault_code != 0; /* reported later, as a kernel's fault is */
  return record_launch(function, grid, block, shared_bytes, params);
}

/* The leading fields of CUlaunchConfig (cluster launches). */
struct launch_config {
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;
  CUstream stream;
  void *attributes;
  unsigned attribute_count;
};

CUresult cuLaunchKernelEx(const struct launch_config *config, void *function, void **params,
                          void **extra) {
  (void)extra;
  if (!config)
    return CUDA_ERROR_INVALID_VALUE;
  return record_launch(function, config->grid, config->block, config->shared_bytes, params);
}

/* ---- memory ------------------------------------------------------------- */

CUresult cuMemAlloc_v2(CUdeviceptr *pointer, size_t size) { return allocate(pointer, size); }

CUresult cuMemAllocManaged(CUdeviceptr *pointer, size_t size, unsigned flags) {
  (void)flags;
  return allocate(pointer, size);
}

CUresult cuMemFree_v2(CUdeviceptr pointer) {
  pthread_mutex_lock(&lock);
  long i = find_allocation(pointer);
  if (i < 0 || allocations[i].base != pointer) {
    pthread_mutex_unlock(&lock);
    return CUDA_ERROR_INVALID_VALUE;
  }
  size_t size = allocations[i].size;
  allocations[i] = allocations[--allocation_count];
  counters.frees++;
  counters.bytes_freed += size;
  counters.live_bytes -= size;
  pthread_mutex_unlock(&lock);
  free((void *)(uintptr_t)pointer);
  return CUDA_SUCCESS;
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t size) {
  return faulted ? fault_code : copy(dst, src, size);
}

/* Streams are synchronous here: the copy is done on return. */
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t size, CUstream stream) {
  (void)stream;
  return faulted ? fault_code : copy(dst, src, size);
}

CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t count, CUstream stream) {
  (void)stream;
  uint16_t *p = (uint16_t *)(uintptr_t)dst;
  for (size_t i = 0; i < count; i++)
    p[i] = value;
  return CUDA_SUCCESS;
}

CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned value, size_t count, CUstream stream) {
  (void)stream;
  uint32_t *p = (uint32_t *)(uintptr_t)dst;
  for (size_t i = 0; i < count; i++)
    p[i] = value;
  return CUDA_SUCCESS;
}

CUresult cuMemHostRegister_v2(void *pointer, size_t size, unsigned flags) {
  (void)size, (void)flags;
  return pointer ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemHostUnregister(void *pointer) {
  return pointer ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* A CUtensorMap is 128 opaque bytes; zeros are as good as any here. */
CUresult cuTensorMapEncodeTiled(void *map, int type, unsigned rank, void *address,
                                const uint64_t *dims, const uint64_t *strides,
                                const unsigned *box, const unsigned *element_strides,
                                int interleave, int swizzle, int promotion, int fill) {
  (void)type, (void)rank, (void)address, (void)dims, (void)strides, (void)box;
  (void)element_strides, (void)interleave, (void)swizzle, (void)promotion, (void)fill;
  if (!map)
    return CUDA_ERROR_INVALID_VALUE;
  memset(map, 0, 128);
  return CUDA_SUCCESS;
}

/* ---- streams and events: everything is already done --------------------- */

CUresult cuStreamCreate(CUstream *stream, unsigned flags) {
  (void)flags;
  if (!stream)
    return CUDA_ERROR_INVALID_VALUE;
  *stream = &dummy_object;
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream stream) {
  (void)stream;
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream stream) {
  (void)stream;
  return faulted ? fault_code : CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) { return faulted ? fault_code : CUDA_SUCCESS; }

CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned flags) {
  (void)stream, (void)flags;
  return event ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuEventCreate(CUevent *event, unsigned flags) {
  (void)flags;
  if (!event)
    return CUDA_ERROR_INVALID_VALUE;
  *event = &dummy_object;
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent event) {
  return event ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuEventRecord(CUevent event, CUstream stream) {
  (void)stream;
  return event ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuEventSynchronize(CUevent event) {
  return event ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* ---- queries for tests (stub.py) ---------------------------------------- */

int stub_max_params(void) { return STUB_MAX_PARAMS; }

long long stub_launch_count(void) {
  pthread_mutex_lock(&lock);
  long long count = (long long)launch_count;
  pthread_mutex_unlock(&lock);
  return count;
}

/* Copies launch `i` to `out`; 0 on success, -1 when there is no such launch. */
int stub_launch(long long i, struct stub_launch *out) {
  pthread_mutex_lock(&lock);
  int found = i >= 0 && (size_t)i < launch_count;
  if (found)
    *out = launches[i];
  pthread_mutex_unlock(&lock);
  return found ? 0 : -1;
}

void stub_counters(struct stub_counters *out) {
  pthread_mutex_lock(&lock);
  *out = counters;
  pthread_mutex_unlock(&lock);
}

int stub_image_kind(void) {
  pthread_mutex_lock(&lock);
  int kind = last_image_kind;
  pthread_mutex_unlock(&lock);
  return kind;
}

/* 1 when `pointer` lies inside a live device allocation. */
int stub_is_device_pointer(unsigned long long pointer) {
  pthread_mutex_lock(&lock);
  int inside = find_allocation((uintptr_t)pointer) >= 0;
  pthread_mutex_unlock(&lock);
  return inside;
}

/* Forgets launches and counters (not live allocations: they stay freeable). */
void stub_reset(void) {
  pthread_mutex_lock(&lock);
  launch_count = 0;
  long long live = counters.live_bytes;
  memset(&counters, 0, sizeof counters);
  counters.live_bytes = live;
  last_image_kind = IMAGE_NONE;
  pthread_mutex_unlock(&lock);
}
