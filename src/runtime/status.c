/* Names of status codes and OpenCL error codes. */
#include "runtime/runtime.h"

CLT_API const char *clt_status_string(clt_status status) {
  switch (status) {
  case CLT_OK: return "ok";
  case CLT_ERR_INVALID_ARGUMENT: return "invalid argument";
  case CLT_ERR_NO_PLATFORM: return "no OpenCL platform";
  case CLT_ERR_NO_DEVICE: return "no matching OpenCL device";
  case CLT_ERR_OPENCL: return "OpenCL error";
  case CLT_ERR_BUILD: return "kernel build failed";
  case CLT_ERR_CLBLAST: return "CLBlast error";
  case CLT_ERR_DEVICE_MEMORY: return "out of device memory";
  case CLT_ERR_HOST_MEMORY: return "out of host memory";
  case CLT_ERR_IO: return "I/O error";
  case CLT_ERR_FORMAT: return "malformed input";
  case CLT_ERR_SHAPE: return "shape mismatch";
  case CLT_ERR_NAN: return "value is NaN or infinite";
  case CLT_ERR_UNSUPPORTED: return "unsupported";
  case CLT_ERR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

const char *clt_cl_error_name(cl_int code) {
  switch (code) {
#define CASE(c) case c: return #c;
    CASE(CL_SUCCESS)
    CASE(CL_DEVICE_NOT_FOUND)
    CASE(CL_DEVICE_NOT_AVAILABLE)
    CASE(CL_COMPILER_NOT_AVAILABLE)
    CASE(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    CASE(CL_OUT_OF_RESOURCES)
    CASE(CL_OUT_OF_HOST_MEMORY)
    CASE(CL_PROFILING_INFO_NOT_AVAILABLE)
    CASE(CL_MEM_COPY_OVERLAP)
    CASE(CL_BUILD_PROGRAM_FAILURE)
    CASE(CL_MAP_FAILURE)
    CASE(CL_INVALID_VALUE)
    CASE(CL_INVALID_DEVICE_TYPE)
    CASE(CL_INVALID_PLATFORM)
    CASE(CL_INVALID_DEVICE)
    CASE(CL_INVALID_CONTEXT)
    CASE(CL_INVALID_QUEUE_PROPERTIES)
    CASE(CL_INVALID_COMMAND_QUEUE)
    CASE(CL_INVALID_MEM_OBJECT)
    CASE(CL_INVALID_BINARY)
    CASE(CL_INVALID_BUILD_OPTIONS)
    CASE(CL_INVALID_PROGRAM)
    CASE(CL_INVALID_PROGRAM_EXECUTABLE)
    CASE(CL_INVALID_KERNEL_NAME)
    CASE(CL_INVALID_KERNEL)
    CASE(CL_INVALID_ARG_INDEX)
    CASE(CL_INVALID_ARG_VALUE)
    CASE(CL_INVALID_ARG_SIZE)
    CASE(CL_INVALID_KERNEL_ARGS)
    CASE(CL_INVALID_WORK_DIMENSION)
    CASE(CL_INVALID_WORK_GROUP_SIZE)
    CASE(CL_INVALID_WORK_ITEM_SIZE)
    CASE(CL_INVALID_GLOBAL_OFFSET)
    CASE(CL_INVALID_EVENT_WAIT_LIST)
    CASE(CL_INVALID_EVENT)
    CASE(CL_INVALID_OPERATION)
    CASE(CL_INVALID_BUFFER_SIZE)
    CASE(CL_INVALID_GLOBAL_WORK_SIZE)
#undef CASE
  case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
  }
  return "unknown OpenCL error";
}
