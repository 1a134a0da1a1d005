#include "executor/fake_fabric.h"

#include <algorithm>
#include <stdexcept>

#include "executor/fake_device.h"

namespace dpro::executor {

namespace {

std::string describe(const CollectiveCall& c) {
  return c.op + " of " + std::to_string(c.bytes) + " bytes " + to_string(c.dtype);
}

}  // namespace

CommHandle FakeFabric::open(const std::vector<Device*>& members) {
  std::vector<FakeDevice*> fakes;
  for (Device* d : members) {
    auto* f = dynamic_cast<FakeDevice*>(d);
    if (!f) throw std::invalid_argument("FakeFabric::open: a member is not a fake device");
    fakes.push_back(f);
  }
  CommHandle handle = 0;
  {
    std::lock_guard lock(mutex_);
    Comm c;
    c.size = members.size();
    c.issued.assign(members.size(), 0);
    comms_.push_back(std::move(c));
    handle = static_cast<CommHandle>(comms_.size());
  }
  for (std::size_t i = 0; i < fakes.size(); ++i) fakes[i]->join(*this, handle, static_cast<int>(i));
  return handle;
}

void FakeFabric::abort() {
  {
    std::lock_guard lock(mutex_);
    aborted_ = true;
  }
  cv_.notify_all();
}

std::string FakeFabric::missing_text(const Comm& comm, std::size_t position, const Instance& in) const {
  std::string missing;
  for (std::size_t m = 0; m < comm.size; ++m)
    if (!in.members_in[m]) missing += (missing.empty() ? "" : ", ") + std::to_string(m);
  return "collective #" + std::to_string(position) + " (" + describe(in.first) + ") on communicator of " +
         std::to_string(comm.size) + " never completed: group member(s) " + missing + " did not issue it";
}

FakeFabric::Started FakeFabric::issue(CommHandle handle, int member, const CollectiveCall& call, Nanos ready) {
  std::unique_lock lock(mutex_);
  if (handle == 0 || handle > comms_.size()) throw std::invalid_argument("FakeFabric: unknown communicator");
  Comm& comm = comms_[handle - 1];
  const auto m = static_cast<std::size_t>(member);
  const std::size_t position = comm.issued.at(m)++;
  Instance& in = comm.open[position];
  Started out;
  if (in.arrived == 0) {
    in.first = call;
    in.members_in.assign(comm.size, false);
    in.duration = call.standin_duration;
  } else if (call.op != in.first.op || call.bytes != in.first.bytes || call.dtype != in.first.dtype) {
    out.mismatch = "collective #" + std::to_string(position) + ": member " + std::to_string(member) + " issued " +
                   describe(call) + ", the first member " + describe(in.first);
  }
  in.members_in[m] = true;
  in.start = std::max(in.start, ready);
  in.duration = std::min(in.duration, call.standin_duration);
  if (++in.arrived == comm.size) cv_.notify_all();
  const bool done = cv_.wait_for(lock, patience_, [&] { return aborted_ || in.arrived == comm.size; });
  if (!done || in.arrived < comm.size) {
    const std::string text = aborted_ ? "fake collective aborted (another rank failed): " + missing_text(comm, position, in)
                                      : "fake collective deadlock: " + missing_text(comm, position, in);
    throw std::runtime_error(text);
  }
  out.start = in.start;
  out.duration = in.duration;
  if (++in.left == comm.size) comm.open.erase(position);
  return out;
}

}  // namespace dpro::executor
