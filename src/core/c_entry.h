// The C entry points libkolo.so exports for the other shared libraries of the wheel. Today one,
// for the TensorFlow op library (src/tfop/): an allreduce or broadcast of a host buffer, enqueued
// and waited for. Plain C signatures, so that library needs none of kolo's C++ types and
// TensorFlow's kernel thread calls into the runtime directly (no Python, no GIL).
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
