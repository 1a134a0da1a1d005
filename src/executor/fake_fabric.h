#pragma once
// Collectives between fake devices (fake_device.h), for tests of multi-rank schedules without a
// GPU. A collective on a communicator completes as NCCL's does: it starts on every member's stream
// when the last member has issued it and its stream reached it (so a late rank delays the others,
// and each member's wait is kept: FakeDevice::Call::collective_wait), and lasts the shortest
// stand-in duration among the members (a recorded NCCL kernel lasts its wait + its transfer; the
// last member to arrive waited least).
//
// The k-th collective a member issues on a communicator is the k-th of every member: a member that
// issues another op, size or dtype there is a violation (NCCL would hang or corrupt), kept by the
// member's device. Issuing blocks the calling host thread (in real time, not on the logical clock)
// until every member has issued the same collective, so that its start is known; a member that
// never issues it ends the wait after `patience` with an error naming the collective and the
// members missing (a deadlock on a GPU), and abort() ends every wait at once.
// Thread-safe; must outlive the devices that joined it.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "executor/device.h"

namespace dpro::executor {

class FakeFabric final : public CollectiveFabric {
 public:
  explicit FakeFabric(std::chrono::milliseconds patience = std::chrono::seconds(60)) : patience_(patience) {}
  std::string name() const override { return "fake"; }
  // Members must be FakeDevices (std::invalid_argument otherwise).
  CommHandle open(const std::vector<Device*>& members) override;
  void abort() override;

  struct Started {
    Nanos start = 0;     // on every member's stream (logical ns)
    Nanos duration = 0;
    std::string mismatch;  // non-empty: this member's call disagreed with the first member's
  };
  // Member `member` of `comm` issues `call`, its stream being ready at `ready`. Blocks until every
  // member has issued its collective of the same position; throws std::runtime_error after
  // patience or abort().
  Started issue(CommHandle comm, int member, const CollectiveCall& call, Nanos ready);

 private:
  struct Instance {
    std::size_t arrived = 0, left = 0;
    Nanos start = 0, duration = 0;
    CollectiveCall first;  // the first arrival's call, which the others must match
    std::vector<bool> members_in;
  };
  struct Comm {
    std::size_t size = 0;
    std::vector<std::size_t> issued;        // per member: collectives issued so far
    std::map<std::size_t, Instance> open;  // by position
  };
  std::string missing_text(const Comm& comm, std::size_t position, const Instance& in) const;

  std::chrono::milliseconds patience_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Comm> comms_;  // handle h is comms_[h - 1]; a deque: open() keeps waiters' references valid
  bool aborted_ = false;
};

}  // namespace dpro::executor
