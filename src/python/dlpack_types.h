// DLPack dtype codes <-> kolo's DataType.
#pragma once

#include <nanobind/ndarray.h>

#include <string>

#include "base/errors.h"
#include "base/types.h"

namespace kolo::python {

inline DataType dtype_from_dlpack(nanobind::dlpack::dtype type, const std::string& name) {
  using nanobind::dlpack::dtype_code;
  const auto code = static_cast<dtype_code>(type.code);
  if (type.lanes == 1) {
    switch (code) {
      case dtype_code::UInt:
        if (type.bits == 8) return DataType::uint8;
        if (type.bits == 64) return DataType::uint64;
        break;
      case dtype_code::Int:
        if (type.bits == 8) return DataType::int8;
        if (type.bits == 16) return DataType::int16;
        if (type.bits == 32) return DataType::int32;
        if (type.bits == 64) return DataType::int64;
        break;
      case dtype_code::Float:
        if (type.bits == 16) return DataType::float16;
        if (type.bits == 32) return DataType::float32;
        if (type.bits == 64) return DataType::float64;
        break;
      case dtype_code::Bfloat:
        if (type.bits == 16) return DataType::bfloat16;
        break;
      case dtype_code::Bool:
        return DataType::boolean;
      default:
        break;
    }
  }
  throw InvalidArgument("tensor '" + name + "' has an unsupported dtype (DLPack code " +
                        std::to_string(type.code) + ", " + std::to_string(type.bits) +
                        " bits); kolo supports uint8, int8, int16, int32, int64, float16, "
                        "bfloat16, float32, float64 and bool");
}

inline nanobind::dlpack::dtype dlpack_from_dtype(DataType type) {
  using nanobind::dlpack::dtype_code;
  auto make = [](dtype_code code, int bits) {
    return nanobind::dlpack::dtype{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
  };
  switch (type) {
    case DataType::uint8:
      return make(dtype_code::UInt, 8);
    case DataType::uint64:
      return make(dtype_code::UInt, 64);
    case DataType::int8:
      return make(dtype_code::Int, 8);
    case DataType::int16:
      return make(dtype_code::Int, 16);
    case DataType::int32:
      return make(dtype_code::Int, 32);
    case DataType::int64:
      return make(dtype_code::Int, 64);
    case DataType::float16:
      return make(dtype_code::Float, 16);
    case DataType::bfloat16:
      return make(dtype_code::Bfloat, 16);
    case DataType::float32:
      return make(dtype_code::Float, 32);
    case DataType::float64:
      return make(dtype_code::Float, 64);
    case DataType::boolean:
      return make(dtype_code::Bool, 8);
  }
  throw InvalidArgument("no DLPack dtype for kolo dtype " + std::to_string(static_cast<int>(type)));
}

}  // namespace kolo::python
