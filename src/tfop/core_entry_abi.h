// The one C function libkolo.so exports for the TensorFlow op library (src/tfop/): an
// allreduce or broadcast of a host buffer, enqueued and waited for. A plain C signature so the
// op library needs none of kolo's C++ headers and TensorFlow's kernel thread calls it directly.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

enum KoloTfRunResult : int {
  kKoloTfOk = 0,
  kKoloTfInvalidArgument = 1,   // a bad argument (Horovod: InvalidArgumentError)
  kKoloTfCollectiveFailed = 2,  // failed between ranks (Horovod: FailedPreconditionError)
};

// op and dtype are kolo's codes (negotiation::OpType, the wire DataType); the message of a
// failure is written, NUL-terminated and truncated, into `message`.
int kolo_tf_run(int op, const char* name, int reduce_op, int root, double prescale,
                double postscale, int process_set, int dtype, const int64_t* shape, int ndims,
                const void* input, void* output, char* message, size_t message_size);
}
