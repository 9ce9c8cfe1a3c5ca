// A farm on loopback for the integration tests and the benchmarks: the real
// farm-coordinator as a process on a store in a scratch directory, and a client that
// sends ClientRequests over a DEALER socket with the real wire code.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "protocol/wire.h"
#include "schedfarm.pb.h"
#include "tests/support/child_process.h"

namespace schedfarm {
namespace testing_support {

// farm-coordinator on `store` at `endpoint` ("tcp://127.0.0.1:*" picks a free port),
// with `extra` flags. endpoint() is the bound one, read from its log.
class CoordinatorProcess {
 public:
  CoordinatorProcess(const std::string& binary, const std::string& store,
                     const std::string& endpoint = "tcp://127.0.0.1:*",
                     const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"--store", store, "--endpoint", endpoint};
    args.insert(args.end(), extra.begin(), extra.end());
    process_ = std::make_unique<ChildProcess>(binary, args);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string log = process_->Log();
      const size_t started = log.find("event=coordinator_started");
      if (started != std::string::npos) {
        const size_t at = log.find("endpoint=", started) + 9;
        endpoint_ = log.substr(at, log.find_first_of(" \n", at) - at);
        return;
      }
      if (process_->Wait(20)) return;  // it exited: the caller looks at the log
    }
  }

  // Empty when it did not start.
  const std::string& endpoint() const { return endpoint_; }
  ChildProcess& process() { return *process_; }
  std::string Log() const { return process_->Log(); }

 private:
  std::unique_ptr<ChildProcess> process_;
  std::string endpoint_;
};

// Control API calls, one request and one reply at a time.
class TestClient {
 public:
  explicit TestClient(const std::string& endpoint) : endpoint_(endpoint) { Connect(); }

  // The reply to `request` (its request_id set when empty), or nothing after timeout_ms.
  std::optional<ClientReply> Call(ClientRequest request, int timeout_ms = 10000) {
    if (request.request_id().empty()) request.set_request_id(NewRequestId());
    Envelope envelope;
    *envelope.mutable_client_request() = request;
    const std::string frame = EncodeEnvelope(envelope);
    socket_->send(zmq::buffer(frame), zmq::send_flags::none);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < deadline) {
      zmq::pollitem_t item = {socket_->handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(20));
      if (!(item.revents & ZMQ_POLLIN)) continue;
      zmq::message_t message;
      if (!socket_->recv(message, zmq::recv_flags::dontwait)) continue;
      const DecodedFrame decoded = DecodeEnvelope(message.to_string_view());
      if (decoded.ok() && decoded.envelope.has_client_reply() &&
          decoded.envelope.client_reply().request_id() == request.request_id()) {
        return decoded.envelope.client_reply();
      }
    }
    Connect();  // a late reply must not answer the next request
    return std::nullopt;
  }

  std::optional<ClientReply> Status(const std::string& campaign = "") {
    ClientRequest request;
    request.mutable_status()->set_campaign(campaign);
    return Call(request);
  }

  // Every measurement of the campaign, through export pages of `page_rows` rows (0:
  // the coordinator's page size); what was read before a failed call.
  std::vector<StoredMeasurementRecord> Export(const std::string& campaign, int page_rows = 0) {
    std::vector<StoredMeasurementRecord> rows;
    uint64_t from = 0;
    while (true) {
      ClientRequest request;
      request.mutable_export_measurements()->set_campaign(campaign);
      request.mutable_export_measurements()->set_from_seq(from);
      request.mutable_export_measurements()->set_max_rows(page_rows);
      std::optional<ClientReply> reply = Call(request);
      if (!reply || reply->code() != CLIENT_OK) return rows;
      for (const StoredMeasurementRecord& row : reply->export_page().rows()) rows.push_back(row);
      if (reply->export_page().done()) return rows;
      from = reply->export_page().next_seq();
    }
  }

  static std::string NewRequestId() {
    static std::mt19937_64 rng{std::random_device{}()};
    return std::to_string(rng()) + std::to_string(rng());
  }

 private:
  void Connect() {
    socket_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::dealer);
    socket_->set(zmq::sockopt::linger, 0);
    socket_->connect(endpoint_);
  }

  std::string endpoint_;
  zmq::context_t context_;
  std::unique_ptr<zmq::socket_t> socket_;
};

// The host of the farm's first worker once it has registered (empty cpu_model: none
// within a minute; a worker measures its peak before it registers).
inline HostFingerprint WorkerHost(TestClient& client) {
  for (int i = 0; i < 600; ++i) {
    ClientRequest request;
    request.mutable_workers();
    std::optional<ClientReply> reply = client.Call(request);
    if (reply && reply->workers().workers_size() > 0) {
      return reply->workers().workers(0).record().host();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return HostFingerprint();
}

}  // namespace testing_support
}  // namespace schedfarm
