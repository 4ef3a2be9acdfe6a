// The few types and functions of TensorFlow's stable C API for ops and kernels that kolo's op
// library uses, declared from TensorFlow's public headers' documentation (tensorflow/c/ops.h,
// kernels.h, tf_tensor.h, tf_status.h) rather than included: kolo is never compiled against
// TensorFlow. The functions are looked up at run time in the libtensorflow_framework.so.2 that
// TensorFlow already loaded (tf_symbols.cc), so one build serves every TensorFlow that exports
// them, and a TensorFlow that does not makes the load fail with a message, not a crash.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kolo::tfop {

struct TF_Status;
struct TF_Tensor;
struct TF_OpDefinitionBuilder;
struct TF_KernelBuilder;
struct TF_OpKernelConstruction;
struct TF_OpKernelContext;

using TF_DataType = int;  // TensorFlow's enum TF_DataType (an int in the C ABI)

enum TF_Code : int {  // tensorflow/c/tf_status.h, the same numbers as absl::StatusCode
  TF_OK = 0,
  TF_INVALID_ARGUMENT = 3,
  TF_FAILED_PRECONDITION = 9,
  TF_INTERNAL = 13,
};

// One pointer per C API function, filled by load_tf_symbols().
struct TfApi {
  TF_Status* (*NewStatus)();
  void (*DeleteStatus)(TF_Status*);
  void (*SetStatus)(TF_Status*, TF_Code, const char*);
  TF_Code (*GetCode)(const TF_Status*);
  const char* (*Message)(const TF_Status*);

  TF_OpDefinitionBuilder* (*NewOpDefinitionBuilder)(const char* op_name);
  void (*OpDefinitionBuilderAddInput)(TF_OpDefinitionBuilder*, const char* spec);
  void (*OpDefinitionBuilderAddOutput)(TF_OpDefinitionBuilder*, const char* spec);
  void (*OpDefinitionBuilderAddAttr)(TF_OpDefinitionBuilder*, const char* spec);
  void (*OpDefinitionBuilderSetIsStateful)(TF_OpDefinitionBuilder*, bool);
  void (*RegisterOpDefinition)(TF_OpDefinitionBuilder*, TF_Status*);

  TF_KernelBuilder* (*NewKernelBuilder)(const char* op_name, const char* device_name,
                                        void* (*create)(TF_OpKernelConstruction*),
                                        void (*compute)(void*, TF_OpKernelContext*),
                                        void (*destroy)(void*));
  void (*RegisterKernelBuilder)(const char* kernel_name, TF_KernelBuilder*, TF_Status*);

  void (*GetAttrSize)(TF_OpKernelConstruction*, const char* name, int32_t* list_size,
                      int32_t* total_size, TF_Status*);
  void (*GetAttrString)(TF_OpKernelConstruction*, const char* name, char* value, size_t max_length,
                        TF_Status*);
  void (*GetAttrInt32)(TF_OpKernelConstruction*, const char* name, int32_t* value, TF_Status*);
  void (*GetAttrFloat)(TF_OpKernelConstruction*, const char* name, float* value, TF_Status*);
  void (*ConstructionFailure)(TF_OpKernelConstruction*, TF_Status*);

  void (*GetInput)(TF_OpKernelContext*, int index, TF_Tensor**, TF_Status*);
  TF_Tensor* (*AllocateOutput)(TF_OpKernelContext*, int index, TF_DataType, const int64_t* dims,
                               int num_dims, size_t length, TF_Status*);
  void (*ContextFailure)(TF_OpKernelContext*, TF_Status*);

  int (*NumDims)(const TF_Tensor*);
  int64_t (*Dim)(const TF_Tensor*, int index);
  void* (*TensorData)(const TF_Tensor*);
  size_t (*TensorByteSize)(const TF_Tensor*);
  TF_DataType (*TensorType)(const TF_Tensor*);
  void (*DeleteTensor)(TF_Tensor*);
};

// Fills `api` from the loaded libtensorflow_framework.so.2; on failure returns false and writes
// why (the library or the first missing symbol) into `why`.
bool load_tf_symbols(TfApi& api, char* why, size_t why_size);

}  // namespace kolo::tfop
