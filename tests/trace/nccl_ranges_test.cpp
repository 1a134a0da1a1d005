// PyTorch's "nccl:<op>" ranges give the NCCL kernels they launched their operation (a grouped
// SendRecv kernel of an all_to_all is an all-to-all) and their message size.
#include <catch2/catch.hpp>

#include <filesystem>

#include "core/error.h"
#include "trace/host_et/host_et_reader.h"
#include "trace/kineto_importer.h"
#include "trace/nccl_ranges.h"
#include "trace_fixtures.h"

using namespace dpro;

namespace {

const std::string kSendRecv = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)";
const std::string kAllReduce = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)";

std::vector<trace::CollectiveInfo> kernels_of(const trace::TraceRank& r) {
  std::vector<trace::CollectiveInfo> out;
  for (const trace::Event& e : r.events)
    if (e.kind == trace::EventKind::kCollective) out.push_back(*r.attrs_of(e)->collective);
  return out;
}

}  // namespace

TEST_CASE("a SendRecv kernel launched by nccl:all_to_all is an all-to-all sized by the range's inputs") {
  const std::string dir = test::fresh_dir("nccl_ranges");
  const std::string file = test::write_nccl_trace(
      dir, 0, 1,
      {{"nccl:all_to_all", kSendRecv, "[[6144]]", R"(["float"])"},
       {"nccl:all_to_all", kSendRecv, "", ""},                                       // no sizes recorded
       {"nccl:all_reduce", kAllReduce, "[[100], [28], []]", R"(["float", "float", "Scalar"])"},
       {"nccl:all_reduce", kSendRecv, "[[100]]", R"(["float"])"},                    // contradicts the kernel
       {"nccl:all_to_all", kSendRecv, "[[7]]", R"(["long int"])", 2},               // one call, two kernels
       {"", kSendRecv, "", ""},                                                      // outside any range
       {"nccl:all_to_all", kAllReduce, "[[64]]", R"(["float"])"},                   // contradicts the kernel
       {"nccl:_all_gather_base", "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
        "[[16]]", R"(["c10::Half"])"}});
  test::CapturingLog log;
  const auto set = test::load({file}, log.log);
  const auto k = kernels_of(set.ranks.at(0));
  REQUIRE(k.size() == 9);
  CHECK(k[0].op == "alltoall");
  CHECK(k[0].in_nelems == 6144);
  CHECK(k[0].dtype == "float");
  CHECK(k[1].op == "alltoall");
  CHECK_FALSE(k[1].in_nelems);
  CHECK(k[2].op == "allreduce");
  CHECK(k[2].in_nelems == 128);
  CHECK(k[3].op == "sendrecv");
  CHECK_FALSE(k[3].in_nelems);
  CHECK(k[4].op == "alltoall");  // the call's 7 elements, shared by its two kernels
  CHECK(k[5].op == "alltoall");
  CHECK(k[4].in_nelems.value_or(0) + k[5].in_nelems.value_or(0) == 7);
  CHECK(k[4].dtype == "long int");
  CHECK(k[6].op == "sendrecv");
  CHECK_FALSE(k[6].in_nelems);
  CHECK(k[7].op == "allreduce");
  CHECK_FALSE(k[7].in_nelems);
  CHECK(k[8].op == "allgather");
  CHECK(k[8].in_nelems == 16);
  CHECK(trace::element_bytes(*k[8].dtype) == 2);
  CHECK(log.contains("4 SendRecv kernel(s) launched by nccl:all_to_all taken for all-to-alls"));
}

TEST_CASE("a kernel that records its own size keeps it over its nccl:* range's") {
  const std::string dir = test::fresh_dir("nccl_ranges_own");
  std::string text = read_whole_file(test::write_nccl_trace(dir, 0, 1, {{"nccl:all_to_all", kSendRecv, "[[6144]]", R"(["float"])"}}));
  const auto at = text.find(R"("device": 0, "stream": 7)");
  REQUIRE(at != std::string::npos);
  text.insert(at, R"("Collective name": "all_to_all", "In msg nelems": 10, "dtype": "Float", )");
  test::write_text(dir + "/rank0.json", text);
  test::CapturingLog log;
  const auto k = kernels_of(test::load({dir + "/rank0.json"}, log.log).ranks.at(0));
  REQUIRE(k.size() == 1);
  CHECK(k[0].op == "alltoall");
  CHECK(k[0].in_nelems == 10);
  CHECK(k[0].dtype == "Float");
}

TEST_CASE("a nccl:* range's message: its tensors' elements, or none where the range cannot say") {
  auto message = [](const std::string& dims, const std::string& types) {
    return trace::range_message(dims, types, "t.json", "event 'nccl:all_to_all'");
  };
  CHECK(message("[[6144]]", R"(["float"])")->nelems == 6144);
  CHECK(message("[[2, 3], [4]]", R"(["int", "int"])")->nelems == 10);
  CHECK(message("[[]]", R"(["float"])")->nelems == 1);  // a 0-d tensor
  CHECK(message("[[8], [], []]", R"(["c10::BFloat16", "Scalar", ""])")->dtype == "c10::BFloat16");
  CHECK_FALSE(message("[[8], [4]]", R"(["float", "double"])"));       // no common type
  CHECK_FALSE(message("[[]]", R"(["TensorList"])"));                 // sizes hidden in a list
  CHECK_FALSE(message("[[[2], [3]]]", R"(["float"])"));              // a list of shapes
  CHECK_FALSE(message("[[]]", R"(["Scalar"])"));                     // no tensor
  CHECK_FALSE(message("[[4]]", "[]"));                               // no types recorded
  REQUIRE_THROWS_WITH(message("[[1099511627776, 2]]", R"(["float"])"),
                      Catch::Contains("t.json") && Catch::Contains("nccl:all_to_all") && Catch::Contains("2^40"));
  CHECK(trace::element_bytes("long int") == 8);
  CHECK(trace::element_bytes("unsigned char") == 1);
  CHECK(trace::element_bytes("ncclFloat32") == 4);
  CHECK(trace::element_bytes("Scalar") == 0);
}

TEST_CASE("DLRM: every SendRecv kernel is an all_to_all, sized as its host execution trace says") {
  // The Kineto traces record no collective metadata on the kernels; the nccl:* ranges around
  // their launches do, and the ranks' host execution traces (tests/comm/data) agree op by op.
  test::CapturingLog log;
  const auto set = test::load({test::dlrm_dir()}, log.log);
  const auto host_et = trace::expand_host_et_paths({test::source_path("tests/comm/data/dlrm-host-et")});
  REQUIRE(set.ranks.size() == 8);
  REQUIRE(host_et.size() == 8);
  std::size_t alltoalls = 0;
  for (std::size_t ri = 0; ri < set.ranks.size(); ++ri) {
    INFO("rank " << set.ranks[ri].rank);
    const auto k = kernels_of(set.ranks[ri]);
    const auto comms = trace::load_host_et_comms(host_et[ri]);
    REQUIRE(k.size() == comms.size());
    for (std::size_t i = 0; i < k.size(); ++i) {
      CHECK(k[i].op == trace::collective_op_from_name(comms[i].op));
      REQUIRE(k[i].in_nelems);
      CHECK(*k[i].in_nelems * trace::element_bytes(k[i].dtype.value_or("")) == comms[i].bytes);
      alltoalls += k[i].op == "alltoall";
    }
  }
  CHECK(alltoalls == 40);
}
