// Runtime names -> compile-time input types and ops: the one dispatch the command-line tool and
// language bindings share ("float", "sum", ...).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <string_view>

#include "fastreduce/ops.cuh"

namespace fastreduce::runtime {

// Every input type the engine is compiled for, by name.
inline constexpr std::string_view kTypeNames[] = {"bool",  "int8",   "uint8", "int16", "uint16",  "int32",   "uint32",
                                                  "int64", "uint64", "float", "double", "half", "bfloat16"};
inline constexpr std::string_view kOpNames[] = {"sum", "prod", "min", "max", "and", "or", "xor"};

// Calls f.template operator()<T>() for the type named `name`; false if the name is unknown.
template <class F>
bool with_type(std::string_view name, F&& f) {
  if (name == "bool") f.template operator()<bool>();
  else if (name == "int8") f.template operator()<std::int8_t>();
  else if (name == "uint8") f.template operator()<std::uint8_t>();
  else if (name == "int16") f.template operator()<std::int16_t>();
  else if (name == "uint16") f.template operator()<std::uint16_t>();
  else if (name == "int32") f.template operator()<std::int32_t>();
  else if (name == "uint32") f.template operator()<std::uint32_t>();
  else if (name == "int64") f.template operator()<std::int64_t>();
  else if (name == "uint64") f.template operator()<std::uint64_t>();
  else if (name == "float") f.template operator()<float>();
  else if (name == "double") f.template operator()<double>();
  else if (name == "half") f.template operator()<__half>();
  else if (name == "bfloat16") f.template operator()<__nv_bfloat16>();
  else return false;
  return true;
}

// Calls f(Op{}) for the op named `name`; false if the name is unknown.
template <class F>
bool with_op(std::string_view name, F&& f) {
  if (name == "sum") f(Sum{});
  else if (name == "prod") f(Prod{});
  else if (name == "min") f(Min{});
  else if (name == "max") f(Max{});
  else if (name == "and") f(BitAnd{});
  else if (name == "or") f(BitOr{});
  else if (name == "xor") f(BitXor{});
  else return false;
  return true;
}

constexpr bool is_integer_type(std::string_view t) {
  return t == "bool" || t == "int8" || t == "uint8" || t == "int16" || t == "uint16" || t == "int32" ||
         t == "uint32" || t == "int64" || t == "uint64";
}
constexpr bool is_bitwise_op(std::string_view op) { return op == "and" || op == "or" || op == "xor"; }

}  // namespace fastreduce::runtime
