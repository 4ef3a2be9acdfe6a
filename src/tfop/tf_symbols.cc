#include <dlfcn.h>

#include <cstdio>

#include "tfop/tf_c_abi.h"

namespace kolo::tfop {

namespace {

template <typename Function>
bool find(void* library, const char* symbol, Function& slot, char* why, size_t why_size) {
  void* address = dlsym(library, symbol);
  if (address == nullptr) {
    std::snprintf(why, why_size, "libtensorflow_framework.so.2 has no %s", symbol);
    return false;
  }
  slot = reinterpret_cast<Function>(address);
  return true;
}

}  // namespace

bool load_tf_symbols(TfApi& api, char* why, size_t why_size) {
  // RTLD_NOLOAD: the copy TensorFlow's Python module already loaded (matched by its soname),
  // never a second one from elsewhere on the library path.
  void* library = dlopen("libtensorflow_framework.so.2", RTLD_NOW | RTLD_NOLOAD);
  if (library == nullptr) {
    std::snprintf(why, why_size, "libtensorflow_framework.so.2 is not loaded (%s)", dlerror());
    return false;
  }
  const bool found =
      find(library, "TF_NewStatus", api.NewStatus, why, why_size) &&
      find(library, "TF_DeleteStatus", api.DeleteStatus, why, why_size) &&
      find(library, "TF_SetStatus", api.SetStatus, why, why_size) &&
      find(library, "TF_GetCode", api.GetCode, why, why_size) &&
      find(library, "TF_Message", api.Message, why, why_size) &&
      find(library, "TF_NewOpDefinitionBuilder", api.NewOpDefinitionBuilder, why, why_size) &&
      find(library, "TF_OpDefinitionBuilderAddInput", api.OpDefinitionBuilderAddInput, why,
           why_size) &&
      find(library, "TF_OpDefinitionBuilderAddOutput", api.OpDefinitionBuilderAddOutput, why,
           why_size) &&
      find(library, "TF_OpDefinitionBuilderAddAttr", api.OpDefinitionBuilderAddAttr, why,
           why_size) &&
      find(library, "TF_OpDefinitionBuilderSetIsStateful", api.OpDefinitionBuilderSetIsStateful,
           why, why_size) &&
      find(library, "TF_RegisterOpDefinition", api.RegisterOpDefinition, why, why_size) &&
      find(library, "TF_NewKernelBuilder", api.NewKernelBuilder, why, why_size) &&
      find(library, "TF_RegisterKernelBuilder", api.RegisterKernelBuilder, why, why_size) &&
      find(library, "TF_OpKernelConstruction_GetAttrSize", api.GetAttrSize, why, why_size) &&
      find(library, "TF_OpKernelConstruction_GetAttrString", api.GetAttrString, why, why_size) &&
      find(library, "TF_OpKernelConstruction_GetAttrInt32", api.GetAttrInt32, why, why_size) &&
      find(library, "TF_OpKernelConstruction_GetAttrFloat", api.GetAttrFloat, why, why_size) &&
      find(library, "TF_OpKernelConstruction_Failure", api.ConstructionFailure, why, why_size) &&
      find(library, "TF_GetInput", api.GetInput, why, why_size) &&
      find(library, "TF_AllocateOutput", api.AllocateOutput, why, why_size) &&
      find(library, "TF_OpKernelContext_Failure", api.ContextFailure, why, why_size) &&
      find(library, "TF_NumDims", api.NumDims, why, why_size) &&
      find(library, "TF_Dim", api.Dim, why, why_size) &&
      find(library, "TF_TensorData", api.TensorData, why, why_size) &&
      find(library, "TF_TensorByteSize", api.TensorByteSize, why, why_size) &&
      find(library, "TF_TensorType", api.TensorType, why, why_size) &&
      find(library, "TF_DeleteTensor", api.DeleteTensor, why, why_size);
  dlclose(library);  // drops only the reference taken here: TensorFlow's stays
  return found;
}

}  // namespace kolo::tfop
