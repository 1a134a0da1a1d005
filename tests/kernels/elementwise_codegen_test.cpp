// The generated chain source, compiled with the host compiler (its non-CUDA half), must compute
// what the CPU interpreter computes, bit for bit, for every op and every load/store dtype.
#include "kernels/elementwise_codegen.h"

#include <catch2/catch.hpp>
#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/half_bits.h"

using namespace dpro::executor;
using namespace dpro::kernels;
namespace fs = std::filesystem;

namespace {

using HostEntry = void (*)(long long, const void* const*, void* const*);

constexpr ElementwiseOp kAllOps[] = {
    ElementwiseOp::kCopy, ElementwiseOp::kAdd,  ElementwiseOp::kSub,     ElementwiseOp::kMul,  ElementwiseOp::kDiv,
    ElementwiseOp::kMax,  ElementwiseOp::kMin,  ElementwiseOp::kRelu,    ElementwiseOp::kGelu, ElementwiseOp::kSilu,
    ElementwiseOp::kSigmoid, ElementwiseOp::kTanh, ElementwiseOp::kExp,  ElementwiseOp::kLog,  ElementwiseOp::kSqrt,
    ElementwiseOp::kRsqrt, ElementwiseOp::kNeg, ElementwiseOp::kAbs,     ElementwiseOp::kScale, ElementwiseOp::kAddScalar,
    ElementwiseOp::kReluBackward, ElementwiseOp::kGeluBackward, ElementwiseOp::kSigmoidBackward, ElementwiseOp::kTanhBackward,
    ElementwiseOp::kSiluBackward, ElementwiseOp::kPowScalar, ElementwiseOp::kClampMin, ElementwiseOp::kFill};
static_assert(std::size(kAllOps) == static_cast<std::size_t>(kLastElementwiseOp) + 1, "every op is checked");

bool binary(ElementwiseOp op) { return elementwise_op_is_binary(op); }

ElementwiseChain single_op_chain(ElementwiseOp op, DType dtype, std::int64_t n) {
  ElementwiseChain c;
  c.steps = {{op, binary(op) ? 1 : -1, 0.37f}};
  c.inputs.resize(2);
  c.outputs.resize(1);
  c.elements = n;
  c.dtype = dtype;
  return c;
}

// A multi-step chain with intermediates stored, reading a third input twice.
ElementwiseChain long_chain(DType dtype, std::int64_t n) {
  ElementwiseChain c;
  c.steps = {{ElementwiseOp::kMul, 1, 0},        {ElementwiseOp::kAddScalar, -1, 0.5f}, {ElementwiseOp::kGelu, -1, 0},
             {ElementwiseOp::kSub, 2, 0},         {ElementwiseOp::kScale, -1, -1.75f},   {ElementwiseOp::kTanh, -1, 0},
             {ElementwiseOp::kMax, 2, 0}};
  c.inputs.resize(3);
  c.outputs.resize(c.steps.size());
  c.elements = n;
  c.dtype = dtype;
  c.store_intermediates = true;
  return c;
}

// Values over signs and magnitudes (zeros, tiny, large), stored in `dtype`, differing per input.
std::vector<std::uint8_t> input_bytes(DType dtype, std::int64_t n, int which) {
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(n) * dtype_bytes(dtype));
  for (std::int64_t i = 0; i < n; ++i) {
    float v = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + which) * std::pow(10.0, (i % 9) - 4 + which));
    if (i % 17 == 0) v = 0.0f;
    if (dtype == DType::kF32) std::memcpy(bytes.data() + 4 * i, &v, 4);
    else {
      std::uint16_t h = dtype == DType::kF16 ? float_to_half(v) : float_to_bf16(v);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  }
  return bytes;
}

struct Case {
  ElementwiseChain chain;
  std::string label;
};

// Compiles the generated sources into one shared library and returns it (dlopen handle).
void* compile_host(const std::vector<Case>& cases, const fs::path& dir) {
  fs::create_directories(dir);
  std::string files;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    fs::path file = dir / ("chain_" + std::to_string(i) + ".cpp");
    std::ofstream(file) << elementwise_source(cases[i].chain);
    files += " '" + file.string() + "'";
  }
  fs::path library = dir / "chains.so";
  std::string command = std::string(DPRO_HOST_CXX) + " -std=c++17 -O1 -shared -fPIC -I'" DPRO_SOURCE_DIR "'" + files +
                        " -o '" + library.string() + "'";
  if (std::system(command.c_str()) != 0) throw std::runtime_error("host compile failed: " + command);
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw std::runtime_error(std::string("dlopen: ") + dlerror());
  return handle;
}

// Runs one case both ways; returns the count of outputs whose bytes differ (NaN == NaN).
int mismatches(void* handle, const ElementwiseChain& chain) {
  auto entry = reinterpret_cast<HostEntry>(dlsym(handle, (chain_kernel_name(chain) + "_host").c_str()));
  REQUIRE(entry != nullptr);
  std::size_t width = dtype_bytes(chain.dtype), count = chain_written_outputs(chain);
  std::vector<std::vector<std::uint8_t>> in;
  std::vector<const void*> in_ptr;
  for (std::size_t i = 0; i < chain.inputs.size(); ++i) in.push_back(input_bytes(chain.dtype, chain.elements, int(i)));
  for (auto& b : in) in_ptr.push_back(b.data());
  std::vector<std::vector<std::uint8_t>> want(count, std::vector<std::uint8_t>(chain.elements * width, 0xab));
  auto got = want;
  std::vector<void*> want_ptr, got_ptr;
  for (std::size_t o = 0; o < count; ++o) want_ptr.push_back(want[o].data()), got_ptr.push_back(got[o].data());
  evaluate_chain_reference(chain, in_ptr, want_ptr);
  entry(chain.elements, in_ptr.data(), got_ptr.data());
  int bad = 0;
  for (std::size_t o = 0; o < count; ++o)
    for (std::int64_t i = 0; i < chain.elements; ++i) {
      if (std::memcmp(want[o].data() + i * width, got[o].data() + i * width, width) == 0) continue;
      if (chain.dtype == DType::kF32) {
        float a, b;
        std::memcpy(&a, want[o].data() + i * 4, 4);
        std::memcpy(&b, got[o].data() + i * 4, 4);
        if (std::isnan(a) && std::isnan(b)) continue;
      }
      ++bad;
    }
  return bad;
}

}  // namespace

TEST_CASE("elementwise codegen: the generated code matches the CPU interpreter for every op and dtype",
          "[kernels][elementwise]") {
  std::vector<Case> cases;
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (ElementwiseOp op : kAllOps) cases.push_back({single_op_chain(op, dtype, 300), std::string(to_string(dtype)) + " op " + std::to_string(int(op))});
    cases.push_back({long_chain(dtype, 300), std::string(to_string(dtype)) + " long chain"});
  }
  void* handle = compile_host(cases, fs::path(DPRO_BINARY_DIR) / "tests" / "kernels" / "generated_chains");
  for (const Case& c : cases) {
    INFO(c.label << ": " << chain_signature(c.chain));
    CHECK(mismatches(handle, c.chain) == 0);
  }
  dlclose(handle);
}

TEST_CASE("elementwise codegen: the interpreter's values for a known chain", "[kernels][elementwise]") {
  ElementwiseChain c;
  c.steps = {{ElementwiseOp::kAdd, 1, 0}, {ElementwiseOp::kRelu, -1, 0}, {ElementwiseOp::kScale, -1, 2.0f}};
  c.inputs.resize(2);
  c.outputs.resize(3);
  c.store_intermediates = true;
  c.elements = 3;
  std::vector<float> a{1, -5, 2}, b{0.5f, 1, -3}, s0(3), s1(3), s2(3);
  evaluate_chain_reference(c, {a.data(), b.data()}, {s0.data(), s1.data(), s2.data()});
  CHECK(s0 == std::vector<float>{1.5f, -4, -1});
  CHECK(s1 == std::vector<float>{1.5f, 0, 0});
  CHECK(s2 == std::vector<float>{3, 0, 0});
  c.dtype = DType::kBF16;  // loads round: 1.0 + 2^-9 is 1.0 in bf16
  std::vector<std::uint16_t> x{float_to_bf16(1.0f)}, y{float_to_bf16(0x1p-9f)}, o0(1), o1(1), o2(1);
  c.elements = 1;
  evaluate_chain_reference(c, {x.data(), y.data()}, {o0.data(), o1.data(), o2.data()});
  CHECK(bf16_to_float(o0[0]) == 1.0f);
  CHECK(bf16_to_float(o2[0]) == 2.0f);
}

// One step over fp32 values: v <- op(g[i], x[i]) (x unused by the unary ops).
std::vector<float> one_step(ElementwiseOp op, float scalar, std::vector<float> g, std::vector<float> x = {}) {
  ElementwiseChain c;
  c.steps = {{op, elementwise_op_is_binary(op) ? 1 : -1, scalar}};
  c.inputs.resize(2);
  c.outputs.resize(1);
  c.elements = static_cast<std::int64_t>(g.size());
  x.resize(g.size());
  std::vector<float> out(g.size(), -99.0f);
  evaluate_chain_reference(c, {g.data(), x.data()}, {out.data()});
  return out;
}

TEST_CASE("elementwise codegen: the backward and scalar ops' values, worked by hand", "[kernels][elementwise]") {
  using Catch::Detail::Approx;
  // threshold_backward (relu's, threshold 0): the gradient where x > 0, else 0.
  CHECK(one_step(ElementwiseOp::kReluBackward, 0.0f, {2, 3, 4, 5}, {-1, 0, 0.5f, 7}) == std::vector<float>{0, 0, 4, 5});
  CHECK(one_step(ElementwiseOp::kReluBackward, 1.0f, {2, 3}, {1, 1.5f}) == std::vector<float>{0, 3});
  // gelu_backward, erf form: g * (Phi(x) + x phi(x)); Phi(1) = 0.8413447, phi(1) = 0.2419707.
  std::vector<float> gelu = one_step(ElementwiseOp::kGeluBackward, 0, {1, 1, 2}, {0, 1, -1});
  CHECK(gelu[0] == 0.5f);
  CHECK(gelu[1] == Approx(1.0833155).epsilon(1e-6));
  CHECK(gelu[2] == Approx(-0.1666309).epsilon(1e-5));
  // sigmoid_backward(g, y) = g (1 - y) y; tanh_backward(g, y) = g (1 - y^2).
  CHECK(one_step(ElementwiseOp::kSigmoidBackward, 0, {2, 4}, {0.25f, 1}) == std::vector<float>{0.375f, 0});
  CHECK(one_step(ElementwiseOp::kTanhBackward, 0, {3, 2}, {0.5f, -1}) == std::vector<float>{2.25f, 0});
  // silu_backward(g, x) = g s (1 + x (1 - s)), s = sigmoid(x): x = 0 gives g / 2; s(2) = 0.8807971.
  std::vector<float> silu = one_step(ElementwiseOp::kSiluBackward, 0, {1, 3, 1}, {0, 2, -1});
  CHECK(silu[0] == 0.5f);
  CHECK(silu[1] == Approx(3.2723527).epsilon(1e-6));
  CHECK(silu[2] == Approx(0.0723295).epsilon(1e-5));
  CHECK(one_step(ElementwiseOp::kPowScalar, 3.0f, {2, -1.5f, 0}) == std::vector<float>{8, -3.375f, 0});
  CHECK(one_step(ElementwiseOp::kPowScalar, 2.0f, {-3}) == std::vector<float>{9});
  std::vector<float> clamped = one_step(ElementwiseOp::kClampMin, 0.5f, {0.2f, 1, NAN, -4});
  CHECK(clamped[0] == 0.5f);
  CHECK(clamped[1] == 1.0f);
  CHECK(std::isnan(clamped[2]));  // as PyTorch's clamp_min: NaN stays NaN
  CHECK(clamped[3] == 0.5f);
  CHECK(one_step(ElementwiseOp::kFill, 7.0f, {1, NAN, -2}) == std::vector<float>{7, 7, 7});
}

TEST_CASE("elementwise codegen: a backward step loads its operand once and scalars key the signature", "[kernels][elementwise]") {
  ElementwiseChain c = single_op_chain(ElementwiseOp::kSiluBackward, DType::kF32, 4);
  const std::string src = elementwise_source(c);
  CHECK(src.find("const float x = dpro_load(in1, i)") != std::string::npos);
  CHECK(src.find("expf(-x)") != std::string::npos);
  for (ElementwiseOp op : {ElementwiseOp::kReluBackward, ElementwiseOp::kPowScalar, ElementwiseOp::kClampMin, ElementwiseOp::kFill}) {
    ElementwiseChain a = single_op_chain(op, DType::kF32, 4), b = a;
    b.steps[0].scalar = 3.0f;
    INFO("op " << int(op));
    CHECK(chain_signature(a) != chain_signature(b));
  }
}

TEST_CASE("elementwise codegen: signatures key the cache and bad chains are refused", "[kernels][elementwise]") {
  ElementwiseChain a = single_op_chain(ElementwiseOp::kScale, DType::kF16, 10);
  ElementwiseChain b = a;
  b.elements = 1 << 20;  // the element count is a launch argument, not part of the code
  CHECK(chain_signature(a) == chain_signature(b));
  CHECK(chain_kernel_name(a) == chain_kernel_name(b));
  b.steps[0].scalar = 0.38f;
  CHECK(chain_signature(a) != chain_signature(b));
  b = a;
  b.dtype = DType::kBF16;
  CHECK(chain_kernel_name(a) != chain_kernel_name(b));

  ElementwiseChain bad = single_op_chain(ElementwiseOp::kAdd, DType::kF32, 4);
  bad.steps[0].input = 2;
  CHECK_THROWS_WITH(validate_chain(bad), Catch::Contains("reads input 2 of 2"));
  bad = single_op_chain(ElementwiseOp::kExp, DType::kI32, 4);
  CHECK_THROWS_WITH(validate_chain(bad), Catch::Contains("int32"));
  bad = long_chain(DType::kF32, 4);
  bad.outputs.pop_back();
  CHECK_THROWS_AS(validate_chain(bad), std::invalid_argument);
  bad = single_op_chain(ElementwiseOp::kScale, DType::kF32, 4);
  bad.steps[0].scalar = INFINITY;
  CHECK_THROWS_AS(elementwise_source(bad), std::invalid_argument);
}
