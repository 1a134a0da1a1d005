// CudaDevice::launch: each Launch alternative to its kernel, library call or runtime call, and
// the stand-in kernel's calibration.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "executor/cuda/compression_runner.h"
#include "executor/cuda/cuda_check.h"
#include "executor/cuda/cuda_device_impl.h"
#include "kernels/cuda_kernels.h"
#include "kernels/elementwise_codegen.h"

namespace dpro::executor::cuda {
namespace {

// A collective on one GPU runs as a stand-in of this footprint: about what NCCL's ring kernels
// occupy on a node (16 channels of 512 threads).
constexpr Dim3 kCollectiveGrid{16, 1, 1};
constexpr Dim3 kCollectiveBlock{512, 1, 1};

std::uint64_t product(std::int64_t a, std::int64_t b, std::int64_t c, std::size_t width) {
  return static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b) * static_cast<std::uint64_t>(c) * width;
}

}  // namespace

void CudaDevice::launch(StreamHandle stream, const Launch& launch) {
  use_device();
  cudaStream_t s = stream_of(stream);
  std::visit([&](const auto& call) { run(s, call); }, launch);
}

void CudaDevice::run(cudaStream_t s, const StandinKernel& k) {
  std::uint64_t threads = std::uint64_t{k.block[0]} * k.block[1] * k.block[2];
  // plan_standin refuses bad blocks too; checked first so the occupancy query gets a valid one.
  int resident = threads >= 1 && threads <= 1024 ? blocks_per_sm(static_cast<std::uint32_t>(threads)) : 1;
  kernels::StandinPlan plan = kernels::plan_standin(k, sm_count_, resident, calibration_);
  check(kernels::cuda::launch_standin(k.grid, k.block, plan.spin_per_block, plan.spin_cycles, s), "stand-in kernel");
}

void CudaDevice::run(cudaStream_t s, const GemmCall& g) {
  std::size_t width = dtype_bytes(g.dtype);
  GemmArgs args{g.m, g.n, g.k, g.batch, g.transpose_a, g.transpose_b, g.dtype, g.math, nullptr, nullptr, nullptr};
  args.a = resolve(g.a, product(g.m, g.k, g.batch, width), "GEMM A");
  args.b = resolve(g.b, product(g.k, g.n, g.batch, width), "GEMM B");
  args.c = resolve(g.c, product(g.m, g.n, g.batch, width), "GEMM C");
  args.epilogue = g.epilogue;
  if (epilogue_reads_bias(g.epilogue) || epilogue_writes_bias(g.epilogue))
    args.bias = resolve(g.bias, product(g.m, g.batch, 1, width), "GEMM epilogue bias");
  if (epilogue_reads_aux(g.epilogue))
    args.aux = resolve(g.aux, gemm_aux_bytes(g.epilogue, g.m, g.n, g.batch, g.dtype), "GEMM epilogue aux");
  gemm_->run(args, s);
}

void CudaDevice::run(cudaStream_t s, const ElementwiseChain& c) {
  kernels::validate_chain(c);
  std::uint64_t bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(c.elements, 0)) * dtype_bytes(c.dtype);
  std::vector<const void*> inputs;
  std::vector<void*> outputs;
  for (const Span& in : c.inputs) inputs.push_back(resolve(in, bytes, "fused chain input"));
  if (c.store_intermediates) {
    for (const Span& out : c.outputs) outputs.push_back(resolve(out, bytes, "fused chain output"));
  } else {
    outputs.push_back(resolve(c.outputs.back(), bytes, "fused chain output"));
  }
  jit_->launch(c, inputs, outputs, s);
}

void CudaDevice::run(cudaStream_t s, const CastCall& c) {
  std::uint64_t n = static_cast<std::uint64_t>(std::max<std::int64_t>(c.elements, 0));
  const void* src = resolve(c.src, n * dtype_bytes(c.from), "cast source");
  void* dst = resolve(c.dst, n * dtype_bytes(c.to), "cast destination");
  cudaError_t e = kernels::cuda::launch_cast(c.from, c.to, src, dst, c.elements, s);
  if (e == cudaErrorInvalidValue) {
    throw std::invalid_argument(std::string("cast ") + to_string(c.from) + " -> " + to_string(c.to) +
                                ": fp32, fp16 and bf16 only");
  }
  check(e, "cast kernel");
}

void CudaDevice::run(cudaStream_t s, const CompressCall& c) {
  CompressPointers p;
  p.src = resolve(c.src, compress_src_bytes(c), "compression source");
  p.dst = resolve(c.dst, compress_dst_bytes(c), "compression destination");
  if (!c.decompress && c.residual.bytes > 0) {
    p.residual = static_cast<float*>(resolve(c.residual, 4ull * static_cast<std::uint64_t>(c.elements), "residual"));
  }
  run_compress(c, p, *gemm_, s);
}

void CudaDevice::run(cudaStream_t s, const CopyCall& c) {
  switch (c.kind) {
    case CopyKind::kHostToDevice: {
      char* host = static_cast<char*>(staging(c.src.offset + c.bytes)) + c.src.offset;
      check(cudaMemcpyAsync(resolve(c.dst, c.bytes, "copy destination"), host, c.bytes, cudaMemcpyHostToDevice, s),
            "cudaMemcpyAsync H2D");
      break;
    }
    case CopyKind::kDeviceToHost: {
      char* host = static_cast<char*>(staging(c.dst.offset + c.bytes)) + c.dst.offset;
      check(cudaMemcpyAsync(host, resolve(c.src, c.bytes, "copy source"), c.bytes, cudaMemcpyDeviceToHost, s),
            "cudaMemcpyAsync D2H");
      break;
    }
    case CopyKind::kDeviceToDevice:
      check(cudaMemcpyAsync(resolve(c.dst, c.bytes, "copy destination"), resolve(c.src, c.bytes, "copy source"), c.bytes,
                            cudaMemcpyDeviceToDevice, s),
            "cudaMemcpyAsync D2D");
      break;
  }
}

void CudaDevice::run(cudaStream_t s, const MemsetCall& m) {
  check(cudaMemsetAsync(resolve(m.dst, m.dst.bytes, "memset"), m.value, m.dst.bytes, s), "cudaMemsetAsync");
}

void CudaDevice::join(CommHandle comm, std::shared_ptr<CommMember> member) {
  std::lock_guard lock(mutex_);
  comms_[comm] = std::move(member);
}

void CudaDevice::run(cudaStream_t s, const CollectiveCall& c) {
  if (c.comm == 0) {
    // One GPU: NCCL refuses several ranks per device, so the collective holds its stream (and a
    // ring's worth of SMs) for the recorded time.
    run(s, StandinKernel{kCollectiveGrid, kCollectiveBlock, c.standin_duration});
    return;
  }
  std::shared_ptr<CommMember> member;
  {
    std::lock_guard lock(mutex_);
    const auto it = comms_.find(c.comm);
    if (it == comms_.end()) throw std::runtime_error("collective: communicator " + std::to_string(c.comm) + " is not open on GPU " + std::to_string(ordinal_));
    member = it->second;
  }
  member->run(s, c, c.bytes > 0 ? resolve(c.buffer, c.bytes, "collective buffer") : nullptr);
}

// The SM clock against %globaltimer over 2 ms (clock64's rate for short spins), then one-wave
// stand-ins (one block per SM) asked for a few durations, timed with events: the line through
// them gives the launch's fixed cost and the spin loop's slope.
void CudaDevice::calibrate_standin() {
  cudaStream_t s = nullptr;
  cudaEvent_t begin = nullptr, end = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "calibration stream");
  check(cudaEventCreate(&begin), "calibration event");
  check(cudaEventCreate(&end), "calibration event");
  Dim3 grid{static_cast<std::uint32_t>(sm_count_), 1, 1}, block{128, 1, 1};
  check(kernels::cuda::launch_standin(grid, block, 1000, 0, s), "calibration warm-up");
  unsigned long long* probe = nullptr;
  unsigned long long elapsed[2] = {0, 0};
  check(cudaMalloc(reinterpret_cast<void**>(&probe), sizeof elapsed), "calibration probe");
  check(kernels::cuda::launch_clock_probe(probe, 2 * kNanosPerMilli, s), "clock probe");
  cudaError_t copied = cudaMemcpyAsync(elapsed, probe, sizeof elapsed, cudaMemcpyDeviceToHost, s);
  if (copied == cudaSuccess) copied = cudaStreamSynchronize(s);
  cudaFree(probe);
  check(copied, "clock probe read-back");
  double cycles_per_ns = elapsed[0] ? static_cast<double>(elapsed[1]) / static_cast<double>(elapsed[0]) : 0.0;
  std::vector<kernels::StandinSample> samples;
  for (Nanos requested : {Nanos{0}, Nanos{20'000}, Nanos{100'000}, Nanos{400'000}}) {
    for (int rep = 0; rep < 3; ++rep) {
      check(cudaEventRecord(begin, s), "calibration record");
      check(kernels::cuda::launch_standin(grid, block, requested, 0, s), "calibration stand-in");
      check(cudaEventRecord(end, s), "calibration record");
      check(cudaEventSynchronize(end), "calibration sync");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, begin, end), "calibration elapsed");
      samples.push_back({requested, static_cast<Nanos>(static_cast<double>(ms) * 1e6)});
    }
  }
  cudaEventDestroy(begin);
  cudaEventDestroy(end);
  cudaStreamDestroy(s);
  calibration_ = kernels::fit_standin_calibration(samples);
  calibration_.cycles_per_ns = cycles_per_ns;
}

}  // namespace dpro::executor::cuda
