#include "core/c_entry.h"

#include <chrono>
#include <cstring>
#include <exception>
#include <utility>

#include "base/errors.h"
#include "base/types.h"
#include "core/runtime.h"
#include "negotiation/message.h"

namespace {

void copy_message(const char* text, char* message, size_t message_size) {
  if (message == nullptr || message_size == 0) return;
  std::strncpy(message, text, message_size - 1);
  message[message_size - 1] = '\0';
}

}  // namespace

// Enqueued with caller_drives, as the Python pointer path (python/enqueue.cc): the calling thread
// (a TensorFlow kernel's) runs the cycles while it waits, instead of waking the background one.
// The caller checked the buffers (same shape in and out, a dtype of kolo's, nothing empty).
extern "C" __attribute__((visibility("default"))) int kolo_tf_run(
    int op, const char* name, int reduce_op, int root, double prescale, double postscale,
    int process_set, int dtype, const int64_t* shape, int ndims, const void* input, void* output,
    char* message, size_t message_size) {
  using namespace kolo;
  try {
    core::TensorEntry entry;
    negotiation::Request& request = entry.request;
    request.name = name;
    request.op = static_cast<negotiation::OpType>(op);
    request.reduce_op = static_cast<negotiation::UserReduceOp>(reduce_op);
    request.root = root;
    request.prescale = prescale;
    request.postscale = postscale;
    request.process_set = process_set;
    request.dtype = dtype_from_wire(static_cast<uint8_t>(dtype));
    request.shape.assign(shape, shape + ndims);
    request.device = negotiation::DeviceKind::cpu;
    entry.input = input;
    entry.output = output;
    entry.caller_drives = true;
    core::Runtime& runtime = core::runtime();
    const core::HandleId handle = runtime.enqueue(std::move(entry));
    try {
      // wait_for, not wait: only it drives a caller_drives handle. Nothing to interrupt it
      // for between slices (TensorFlow cancels a graph only between kernels).
      while (!runtime.wait_for(handle, std::chrono::milliseconds(1000))) {
      }
    } catch (...) {
      (void)runtime.release(handle);
      throw;
    }
    (void)runtime.release(handle);
    return kKoloTfOk;
  } catch (const InvalidArgument& error) {
    copy_message(error.what(), message, message_size);
    return kKoloTfInvalidArgument;
  } catch (const std::exception& error) {
    copy_message(error.what(), message, message_size);
    return kKoloTfCollectiveFailed;
  }
}
