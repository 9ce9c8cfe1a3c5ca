// Simulated workers for the coordinator's tests and benchmarks, where the component
// under test is the real farm-coordinator: DEALER sockets that speak the real wire
// code (protocol/wire.h) as farm-worker does (Register with a host fingerprint and
// credits, heartbeats, a Result for each Lease) but run no job: a lease's result is
// synthetic, OK with three samples around a given time.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <zmq.hpp>

#include "common/log.h"
#include "protocol/wire.h"
#include "schedfarm.pb.h"

namespace schedfarm {
namespace testing_support {

// The fingerprint of a simulated host: 8 cores of x86-64 with AVX2 and FMA.
inline HostFingerprint SimulatedHost(const std::string& worker_id, const std::string& hostname) {
  HostFingerprint host;
  host.set_worker_id(worker_id);
  host.set_hostname(hostname);
  host.set_cpu_model("simulated");
  host.set_cores(8);
  for (const char* isa : {"sse4_1", "avx", "avx2", "fma"}) host.add_isa_flags(isa);
  host.set_halide_target("x86-64-linux-avx2-fma");
  return host;
}

// A DEALER connected to `endpoint` that closes at once (linger 0), with high-water
// marks of `hwm` messages each way.
inline std::unique_ptr<zmq::socket_t> SimulatedWorkerSocket(zmq::context_t& context,
                                                            const std::string& endpoint,
                                                            int hwm = 10000) {
  auto socket = std::make_unique<zmq::socket_t>(context, zmq::socket_type::dealer);
  socket->set(zmq::sockopt::linger, 0);
  socket->set(zmq::sockopt::sndhwm, hwm);
  socket->set(zmq::sockopt::rcvhwm, hwm);
  socket->connect(endpoint);
  return socket;
}

inline std::string RegisterFrame(const HostFingerprint& host, int credits,
                                 const std::string& instance) {
  Envelope envelope;
  Register* reg = envelope.mutable_register_();
  *reg->mutable_host() = host;
  reg->set_credits(credits);
  reg->set_instance(instance);
  return EncodeEnvelope(std::move(envelope));
}

// The synthetic Result of `lease` from `host`: its candidate and settings are moved
// into the measurement, OK, three samples around `base_seconds`.
inline Envelope SyntheticResult(const HostFingerprint& host, Lease* lease, double base_seconds) {
  Envelope envelope;
  Measurement* m = envelope.mutable_result()->mutable_measurement();
  m->mutable_candidate()->Swap(lease->mutable_candidate());
  *m->mutable_host() = host;
  m->set_status(OK);
  m->set_compile_seconds(0.05);
  for (int s = 0; s < 3; ++s) m->add_samples_seconds(base_seconds * (1 + 0.01 * s));
  SampleStats* stats = m->mutable_stats();
  stats->set_min_seconds(base_seconds);
  stats->set_median_seconds(base_seconds * 1.01);
  stats->set_mean_seconds(base_seconds * 1.01);
  stats->set_stddev_seconds(base_seconds * 0.01);
  stats->set_cv(0.0099);
  m->set_output_checksum("0123abcd");
  m->set_lease_id(lease->lease_id());
  m->set_finished_unix_ms(UnixMillis());
  m->mutable_settings()->Swap(lease->mutable_settings());
  m->set_repeats_per_sample(1);
  return envelope;
}

// One simulated worker driven by one thread: its socket, host and instance, and the
// sends and receives of the protocol. Sends never block: a refused send returns false.
class SimulatedWorker {
 public:
  SimulatedWorker(zmq::context_t& context, const std::string& endpoint,
                  const std::string& worker_id, int credits, const std::string& instance)
      : socket_(SimulatedWorkerSocket(context, endpoint)),
        host_(SimulatedHost(worker_id, "sim-" + worker_id)),
        credits_(credits),
        instance_(instance) {}

  zmq::socket_t& socket() { return *socket_; }

  bool SendRegister() { return Send(RegisterFrame(host_, credits_, instance_)); }
  bool SendHeartbeat() { return Send(EncodeEnvelope(MakeHeartbeat())); }
  // Answers `lease` with its synthetic result.
  bool SendResult(Lease* lease, double base_seconds) {
    return Send(EncodeEnvelope(SyntheticResult(host_, lease, base_seconds)));
  }

  // The next message waiting, decoded (a frame the wire code refuses too); nothing
  // when none waits.
  std::optional<DecodedFrame> Receive() {
    zmq::message_t message;
    if (!socket_->recv(message, zmq::recv_flags::dontwait)) return std::nullopt;
    return DecodeEnvelope(message.to_string_view());
  }

  // Closes the socket: its connection goes at once, with whatever it held.
  void Close() { socket_.reset(); }
  bool closed() const { return socket_ == nullptr; }

 private:
  bool Send(const std::string& frame) {
    return socket_->send(zmq::buffer(frame), zmq::send_flags::dontwait).has_value();
  }

  std::unique_ptr<zmq::socket_t> socket_;
  HostFingerprint host_;
  int credits_;
  std::string instance_;
};

}  // namespace testing_support
}  // namespace schedfarm
