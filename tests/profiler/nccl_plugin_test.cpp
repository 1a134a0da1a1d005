// The NCCL profiler plugin driven through its exported v5/v4 entry points, as NCCL would:
// nested group/coll/kernel events, events stopped out of order and from other threads,
// several communicators, PXN proxy events from another process.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

#include "plugin_abi_client.h"
#include "trace/native/native_reader.h"

using namespace dpro;
namespace abi = dpro::profiler::nccl_abi;

namespace {

std::string& output_dir() {
  static std::string dir = std::filesystem::temp_directory_path() / ("dpro-nccl-" + std::to_string(::getpid()));
  return dir;
}

// Registered before the library's own exit handler, so it runs after the trace is closed.
void remove_output_dir() {
  std::error_code ec;
  std::filesystem::remove_all(output_dir(), ec);
}

// One library load per test process, writing into a private directory.
test::InjectedLibrary& library() {
  static test::InjectedLibrary* lib = [] {
    ::setenv("DPRO_PROFILE_OUT", output_dir().c_str(), 1);  // constructs the path first:
    std::atexit(remove_output_dir);                        // it must outlive the handler
    ::setenv("DPRO_PROFILE_FLUSH_MS", "0", 1);
    ::setenv("RANK", "5", 1);
    return new test::InjectedLibrary(DPRO_INJECT_LIB);
  }();
  return *lib;
}

native::NativeCapture flush_and_read() {
  auto& lib = library();
  REQUIRE(lib.flush() == 0);
  Logger log(LogLevel::kQuiet);
  return native::read_native_capture(lib.trace_path(), log);
}

abi::EventDescrV5 descr(std::uint64_t type, void* parent, int rank = 0) {
  abi::EventDescrV5 d{};
  d.type = type;
  d.parentObj = parent;
  d.rank = rank;
  return d;
}

void* start(void* ctx, abi::EventDescrV5 d) {
  void* h = nullptr;
  REQUIRE(library().v5->startEvent(ctx, &h, &d) == abi::kSuccess);
  return h;
}

void stop(void* h) { REQUIRE(library().v5->stopEvent(h) == abi::kSuccess); }

// For worker threads: Catch2 assertions are not thread-safe.
void* start_raw(void* ctx, abi::EventDescrV5 d) {
  void* h = nullptr;
  library().v5->startEvent(ctx, &h, &d);
  return h;
}

void* init_comm(std::uint64_t hash, int rank, int nranks, int* mask = nullptr) {
  void* ctx = nullptr;
  int m = 0;
  REQUIRE(library().v5->init(&ctx, hash, &m, "test-comm", 1, nranks, rank, nullptr) == abi::kSuccess);
  if (mask) *mask = m;
  return ctx;
}

// One ncclAllReduce as NCCL 2.28 reports it; stops in a scrambled order.
void allreduce(void* ctx, std::uint64_t seq, int rank) {
  void* group = start(ctx, descr(abi::kGroupApi, nullptr, rank));
  auto api = descr(abi::kCollApi, group, rank);
  api.collApi.func = "AllReduce";
  api.collApi.count = 1024;
  api.collApi.datatype = "ncclFloat32";
  void* coll_api = start(ctx, api);
  auto c = descr(abi::kColl, coll_api, rank);
  c.coll.seqNumber = seq;
  c.coll.func = "AllReduce";
  c.coll.count = 1024;
  c.coll.datatype = "ncclFloat32";
  c.coll.nChannels = 2;
  c.coll.algo = "RING";
  c.coll.proto = "SIMPLE";
  void* coll = start(ctx, c);
  stop(coll_api);
  void* launch = start(ctx, descr(abi::kKernelLaunch, group, rank));
  stop(launch);
  stop(group);  // the group ends before its kernel channels report
  auto ch = descr(abi::kKernelCh, coll, rank);
  ch.kernelCh.channelId = 1;
  ch.kernelCh.pTimer = 1000 + seq;
  void* channel = start(ctx, ch);
  stop(coll);
  abi::EventStateArgs args{};
  args.kernelCh.pTimer = 5000 + seq;
  REQUIRE(library().v5->recordEventState(channel, abi::kStateKernelChStop, &args) == abi::kSuccess);
  stop(channel);  // last reference: the whole tree is released here
}

std::vector<const native::StoredNcclColl*> colls_of(const native::NativeCapture& c, std::uint64_t comm) {
  std::vector<const native::StoredNcclColl*> out;
  for (const auto& x : c.nccl_colls)
    if (x.comm_hash == comm) out.push_back(&x);
  return out;
}

}  // namespace

TEST_CASE("v5 plugin records nested group, collective, launch and channel events", "[nccl]") {
  int mask = 0;
  void* ctx_a = init_comm(0xA1, 2, 4, &mask);
  void* ctx_b = init_comm(0xB2, 0, 2);
  CHECK((mask & abi::kColl));
  CHECK((mask & abi::kKernelLaunch));
  CHECK((mask & abi::kKernelCh));
  CHECK_FALSE((mask & abi::kProxyStep));
  for (std::uint64_t seq = 0; seq < 3; ++seq) {
    allreduce(ctx_a, seq, 2);
    allreduce(ctx_b, seq, 0);
  }
  auto c = flush_and_read();
  auto a = colls_of(c, 0xA1), b = colls_of(c, 0xB2);
  REQUIRE(a.size() == 3);
  REQUIRE(b.size() == 3);
  CHECK(c.str(a[0]->func) == "AllReduce");
  CHECK(c.str(a[0]->algo) == "RING");
  CHECK(c.str(a[0]->proto) == "SIMPLE");
  CHECK(c.str(a[0]->datatype) == "ncclFloat32");
  CHECK(a[0]->channels == 2);
  CHECK(a[0]->rank == 2);
  CHECK(a[2]->sequence == 2);
  CHECK((a[2]->flags & native::kCollHasSequence));
  CHECK(c.header.rank == 5);
  // Each collective's group matches exactly one KernelLaunch of its communicator.
  for (const auto* coll : a) {
    int launches = 0;
    for (const auto& l : c.nccl_launches)
      launches += l.comm_hash == coll->comm_hash && l.group_id == coll->group_id;
    CHECK(launches == 1);
    bool channel = false;
    for (const auto& k : c.nccl_kernel_channels)
      channel |= k.coll_id == coll->id && k.gpu_stop == k.gpu_start + 4000;
    CHECK(channel);
  }
  CHECK(a[0]->group_id != a[1]->group_id);
  int comms = 0;
  for (const auto& comm : c.nccl_comms) comms += comm.comm_hash == 0xA1 && comm.nranks == 4;
  CHECK(comms == 1);
  int api_calls = 0;
  for (const auto& api : c.nccl_apis) api_calls += api.comm_hash == 0xB2;
  CHECK(api_calls == 3);
}

TEST_CASE("events started on one thread may be stopped on others", "[nccl]") {
  constexpr int kThreads = 4, kOps = 200;
  std::vector<void*> ctx;
  for (int t = 0; t < kThreads; ++t) ctx.push_back(init_comm(0xC0 + static_cast<std::uint64_t>(t), t, kThreads));
  // Each thread starts a coll under a group; a different thread stops it.
  std::vector<std::vector<void*>> started(kThreads);
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([&, t] {
      for (int k = 0; k < kOps; ++k) {
        void* group = start_raw(ctx[t], descr(abi::kGroupApi, nullptr, t));
        auto c = descr(abi::kColl, group, t);
        c.coll.func = "AllGather";
        c.coll.seqNumber = static_cast<std::uint64_t>(k);
        started[t].push_back(start_raw(ctx[t], c));
        library().v5->stopEvent(group);
      }
    });
  for (auto& w : workers) w.join();
  workers.clear();
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([&, t] {
      for (void* h : started[(t + 1) % kThreads]) library().v5->stopEvent(h);
    });
  for (auto& w : workers) w.join();
  auto c = flush_and_read();
  for (int t = 0; t < kThreads; ++t) {
    auto colls = colls_of(c, 0xC0 + static_cast<std::uint64_t>(t));
    REQUIRE(colls.size() == kOps);
    std::vector<bool> seen(kOps, false);
    for (const auto* x : colls) seen[x->sequence] = true;
    CHECK(std::all_of(seen.begin(), seen.end(), [](bool s) { return s; }));
  }
}

TEST_CASE("proxy events, unknown types and null handles are ignored safely", "[nccl]") {
  void* ctx = init_comm(0xD1, 0, 2);
  auto proxy = descr(abi::kProxyOp, reinterpret_cast<void*>(0x1), 0);  // PXN: parent not ours
  proxy.proxyOp.pid = ::getpid() + 1;
  CHECK(start(ctx, proxy) == nullptr);
  CHECK(start(ctx, descr(abi::kNetPlugin, nullptr)) == nullptr);
  CHECK(start(nullptr, descr(abi::kColl, nullptr)) == nullptr);
  CHECK(library().v5->stopEvent(nullptr) == abi::kSuccess);
  CHECK(library().v5->recordEventState(nullptr, abi::kStateKernelChStop, nullptr) == abi::kSuccess);
  CHECK(library().v5->finalize(ctx) == abi::kSuccess);
}

TEST_CASE("the v4 entry points (NCCL 2.27) record collectives under Group events", "[nccl]") {
  void* ctx = nullptr;
  int mask = 0;
  REQUIRE(library().v4->init(&ctx, &mask, "v4", 0xE4, 1, 2, 1, nullptr) == abi::kSuccess);
  CHECK((mask & abi::kGroup));
  CHECK_FALSE((mask & abi::kKernelLaunch));
  abi::EventDescrV4 g{};
  g.type = abi::kGroup;
  void* group = nullptr;
  REQUIRE(library().v4->startEvent(ctx, &group, &g) == abi::kSuccess);
  abi::EventDescrV4 c{};
  c.type = abi::kColl;
  c.parentObj = group;
  c.rank = 1;
  c.coll.func = "ReduceScatter";
  c.coll.seqNumber = 9;
  c.coll.count = 77;
  c.coll.algo = "RING";
  c.coll.proto = "LL";
  c.coll.nChannels = 4;
  void* coll = nullptr;
  REQUIRE(library().v4->startEvent(ctx, &coll, &c) == abi::kSuccess);
  library().v4->stopEvent(group);
  library().v4->stopEvent(coll);
  auto capture = flush_and_read();
  auto colls = colls_of(capture, 0xE4);
  REQUIRE(colls.size() == 1);
  CHECK(capture.str(colls[0]->func) == "ReduceScatter");
  CHECK(colls[0]->sequence == 9);
  CHECK(colls[0]->count == 77);
  CHECK(colls[0]->channels == 4);
  CHECK(colls[0]->group_id != 0);
}
