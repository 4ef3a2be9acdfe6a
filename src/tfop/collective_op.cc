// libkolo_tfop.so: the KoloCollective graph op, registered through TensorFlow's stable C API when
// tf.load_op_library loads this library (python/kolo/tensorflow/native_op.py). Its kernel hands
// the input tensor's buffer and a freshly allocated output to libkolo's kolo_tf_run on the
// kernel's own thread: no Python, no GIL, no error-status node. Allreduce and broadcast only
// (same shape in and out); kolo's other collectives stay tf.numpy_function nodes.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/c_entry.h"
#include "tfop/tf_c_abi.h"

namespace kolo::tfop {

namespace {

constexpr size_t kMessageSize = 4096;
TfApi api{};
char load_error[kMessageSize] = "";  // empty when the op and kernel were registered

// What the graph fixed at trace time (the op's attributes).
struct Attributes {
  std::string name;
  int32_t op = 0;
  int32_t reduce_op = 0;
  int32_t root = 0;
  float prescale = 1.0F;
  float postscale = 1.0F;
  int32_t process_set = 0;
  int32_t kolo_dtype = 0;
};

void* create(TF_OpKernelConstruction* construction) {
  auto* attributes = new Attributes;
  TF_Status* status = api.NewStatus();
  int32_t list_size = 0;
  int32_t total_size = 0;
  api.GetAttrSize(construction, "kolo_name", &list_size, &total_size, status);
  if (api.GetCode(status) == TF_OK) {
    std::vector<char> name(static_cast<size_t>(total_size) + 1, '\0');
    api.GetAttrString(construction, "kolo_name", name.data(), name.size(), status);
    attributes->name.assign(name.data(), static_cast<size_t>(total_size));
  }
  if (api.GetCode(status) == TF_OK)
    api.GetAttrInt32(construction, "kolo_op", &attributes->op, status);
  if (api.GetCode(status) == TF_OK) {
    api.GetAttrInt32(construction, "reduce_op", &attributes->reduce_op, status);
  }
  if (api.GetCode(status) == TF_OK)
    api.GetAttrInt32(construction, "root", &attributes->root, status);
  if (api.GetCode(status) == TF_OK) {
    api.GetAttrFloat(construction, "prescale", &attributes->prescale, status);
  }
  if (api.GetCode(status) == TF_OK) {
    api.GetAttrFloat(construction, "postscale", &attributes->postscale, status);
  }
  if (api.GetCode(status) == TF_OK) {
    api.GetAttrInt32(construction, "process_set", &attributes->process_set, status);
  }
  if (api.GetCode(status) == TF_OK) {
    api.GetAttrInt32(construction, "kolo_dtype", &attributes->kolo_dtype, status);
  }
  if (api.GetCode(status) != TF_OK) api.ConstructionFailure(construction, status);
  api.DeleteStatus(status);
  return attributes;
}

void fail(TF_OpKernelContext* context, TF_Status* status, TF_Code code, const char* message) {
  api.SetStatus(status, code, message);
  api.ContextFailure(context, status);
}

void compute(void* kernel, TF_OpKernelContext* context) {
  const auto& attributes = *static_cast<const Attributes*>(kernel);
  TF_Status* status = api.NewStatus();
  TF_Tensor* input = nullptr;
  TF_Tensor* output = nullptr;
  api.GetInput(context, 0, &input, status);
  if (api.GetCode(status) != TF_OK) {
    api.ContextFailure(context, status);
  } else {
    const int ndims = api.NumDims(input);
    std::vector<int64_t> shape(static_cast<size_t>(ndims));
    for (int d = 0; d < ndims; ++d) shape[static_cast<size_t>(d)] = api.Dim(input, d);
    const size_t bytes = api.TensorByteSize(input);
    output =
        api.AllocateOutput(context, 0, api.TensorType(input), shape.data(), ndims, bytes, status);
    if (api.GetCode(status) != TF_OK) {
      api.ContextFailure(context, status);
    } else if (bytes > 0) {  // an empty tensor has nothing to send (the NumPy path's rule too)
      char message[kMessageSize] = "";
      const int result =
          kolo_tf_run(attributes.op, attributes.name.c_str(), attributes.reduce_op, attributes.root,
                      attributes.prescale, attributes.postscale, attributes.process_set,
                      attributes.kolo_dtype, shape.data(), ndims, api.TensorData(input),
                      api.TensorData(output), message, sizeof(message));
      if (result == kKoloTfInvalidArgument) {
        fail(context, status, TF_INVALID_ARGUMENT, message);
      } else if (result != kKoloTfOk) {
        // Horovod's class for a collective that failed between ranks; the prefix is what
        // kolo.tensorflow.elastic and graph_errors.py look for.
        const std::string text = std::string("CollectiveFailed: ") + message;
        fail(context, status, TF_FAILED_PRECONDITION, text.c_str());
      }
    }
  }
  if (output != nullptr) api.DeleteTensor(output);
  if (input != nullptr) api.DeleteTensor(input);
  api.DeleteStatus(status);
}

void destroy(void* kernel) { delete static_cast<Attributes*>(kernel); }

bool check(TF_Status* status, const char* what) {
  if (api.GetCode(status) == TF_OK) return true;
  std::snprintf(load_error, sizeof(load_error), "%s: %s", what, api.Message(status));
  return false;
}

void register_op() {
  if (!load_tf_symbols(api, load_error, sizeof(load_error))) return;
  TF_Status* status = api.NewStatus();
  TF_OpDefinitionBuilder* op = api.NewOpDefinitionBuilder("KoloCollective");
  api.OpDefinitionBuilderAddInput(op, "tensor: T");
  api.OpDefinitionBuilderAddOutput(op, "output: T");
  api.OpDefinitionBuilderAddAttr(
      op, "T: {uint8, int8, int16, int32, int64, half, float, double, bool}");
  api.OpDefinitionBuilderAddAttr(op, "kolo_name: string");
  api.OpDefinitionBuilderAddAttr(op, "kolo_op: int");
  api.OpDefinitionBuilderAddAttr(op, "reduce_op: int = 0");
  api.OpDefinitionBuilderAddAttr(op, "root: int = 0");
  api.OpDefinitionBuilderAddAttr(op, "prescale: float = 1.0");
  api.OpDefinitionBuilderAddAttr(op, "postscale: float = 1.0");
  api.OpDefinitionBuilderAddAttr(op, "process_set: int = 0");
  api.OpDefinitionBuilderAddAttr(op, "kolo_dtype: int");
  // Stateful: never constant-folded, deduplicated or pruned for having no consumer.
  api.OpDefinitionBuilderSetIsStateful(op, true);
  api.RegisterOpDefinition(op, status);
  if (check(status, "registering the KoloCollective op")) {
    TF_KernelBuilder* kernel =
        api.NewKernelBuilder("KoloCollective", "CPU", create, compute, destroy);
    api.RegisterKernelBuilder("KoloCollectiveCpu", kernel, status);
    check(status, "registering the KoloCollective CPU kernel");
  }
  api.DeleteStatus(status);
}

// Registration happens while tf.load_op_library loads the library, as TensorFlow's own C API ops
// do it (TensorFlow collects what is registered during the load).
const bool registered = (register_op(), true);

}  // namespace

}  // namespace kolo::tfop

// Why the op is missing (empty when it was registered): read by native_op.py with ctypes.
extern "C" __attribute__((visibility("default"))) const char* kolo_tfop_load_error() {
  return kolo::tfop::load_error;
}
