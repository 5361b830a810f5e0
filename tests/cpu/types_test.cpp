// Which C++ types the public API accepts, what it reads them as and what it returns: checked at
// compile time (a wrong mapping fails the build), plus the runtime names the tool and bindings use.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fastreduce/fastreduce.cuh"
#include "fastreduce/runtime.hpp"

namespace fr = fastreduce;

// Every standard integer type is read as the fixed-width type of its size and signedness.
static_assert(std::is_same_v<fr::storage_t<long long>, std::int64_t>);
static_assert(std::is_same_v<fr::storage_t<unsigned long long>, std::uint64_t>);
static_assert(std::is_same_v<fr::storage_t<long>, std::conditional_t<sizeof(long) == 8, std::int64_t, std::int32_t>>);
static_assert(std::is_same_v<fr::storage_t<short>, std::int16_t>);
static_assert(std::is_same_v<fr::storage_t<unsigned short>, std::uint16_t>);
static_assert(std::is_same_v<fr::storage_t<signed char>, std::int8_t>);
static_assert(std::is_same_v<fr::storage_t<unsigned char>, std::uint8_t>);
static_assert(std::is_same_v<fr::storage_t<char16_t>, std::uint16_t>);
static_assert(std::is_same_v<fr::storage_t<const int>, std::int32_t>);
static_assert(std::is_same_v<fr::storage_t<bool>, bool>);
static_assert(std::is_same_v<fr::storage_t<__nv_bfloat16>, __nv_bfloat16>);

// 1- and 2-byte integers and bool sum and multiply into int64 (as PyTorch does); Min, Max and
// the bitwise ops keep the input type; 4- and 8-byte integers keep theirs; half types give float.
static_assert(std::is_same_v<fr::acc_t<bool, fr::Sum>, std::int64_t>);
static_assert(std::is_same_v<fr::acc_t<unsigned char, fr::Prod>, std::int64_t>);
static_assert(std::is_same_v<fr::acc_t<short, fr::Sum>, std::int64_t>);
static_assert(std::is_same_v<fr::acc_t<short, fr::Max>, short>);
static_assert(std::is_same_v<fr::acc_t<bool, fr::Min>, bool>);
static_assert(std::is_same_v<fr::acc_t<signed char, fr::BitXor>, signed char>);
static_assert(std::is_same_v<fr::acc_t<long long, fr::Sum>, long long>);
static_assert(std::is_same_v<fr::acc_t<unsigned, fr::Prod>, unsigned>);
static_assert(std::is_same_v<fr::acc_t<__half, fr::Max>, float>);

// What reduce() accepts: anything else fails to compile naming the type (see
// tests/compile_fail/unsupported_type.cpp, which CTest compiles and expects to fail).
static_assert(fr::reducible<long long, fr::Sum> && fr::reducible<bool, fr::BitOr> && fr::reducible<__half, fr::Min>);
static_assert(!fr::reducible<long double, fr::Sum>);
static_assert(!fr::reducible<int*, fr::Sum>);
static_assert(!fr::reducible<std::string, fr::Max>);
static_assert(!fr::reducible<float, fr::BitAnd>, "bitwise ops need integers");
static_assert(!fr::reducible<__nv_bfloat16, fr::BitOr>);
struct NotAnOp {};
static_assert(!fr::reducible<float, NotAnOp>, "only the ops the library is compiled for");

// The identities a reduction of nothing returns, in every type's own terms.
static_assert(fr::Min::identity<bool>() == true && fr::Max::identity<bool>() == false);
static_assert(fr::Min::identity<std::int8_t>() == 127 && fr::Max::identity<std::int8_t>() == -128);
static_assert(fr::Min::identity<std::uint16_t>() == 65535 && fr::Max::identity<std::uint16_t>() == 0);
static_assert(fr::Max::identity<std::int64_t>() == INT64_MIN && fr::Min::identity<std::uint64_t>() == UINT64_MAX);
static_assert(fr::BitAnd::identity<std::uint8_t>() == 0xFF && fr::BitAnd::identity<bool>() == true);

TEST(RuntimeNames, EveryTypeAndOpNameDispatches) {
  std::vector<std::string> seen;
  for (std::string_view name : fr::runtime::kTypeNames) {
    std::size_t size = 0;
    EXPECT_TRUE(fr::runtime::with_type(name, [&]<class T>() {
      static_assert(fr::input_type<T>);
      size = sizeof(T);
    })) << name;
    EXPECT_GT(size, 0u) << name;
    EXPECT_EQ(fr::runtime::is_integer_type(name), name != "float" && name != "double" && name != "half" &&
                                                      name != "bfloat16") << name;
  }
  for (std::string_view name : fr::runtime::kOpNames) {
    std::string got;
    EXPECT_TRUE(fr::runtime::with_op(name, [&](auto op) { got = decltype(op)::name; })) << name;
    EXPECT_EQ(got, name);
    EXPECT_EQ(fr::runtime::is_bitwise_op(name), name == "and" || name == "or" || name == "xor");
  }
  EXPECT_FALSE(fr::runtime::with_type("float128", []<class T>() {}));
  EXPECT_FALSE(fr::runtime::with_op("mean", [](auto) {}));
}
