// FarmClient against real sockets on loopback: a closed port (retries, then an error
// naming the endpoint and the time tried), a peer that answers only the second try (same
// request_id on a fresh connection), a restart of the peer, stale replies and refusals,
// and CURVE with the ZAP allow-list (an allowed key gets through, an unknown one is told).
#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <set>
#include <thread>
#include <zmq.hpp>

#include "control_peer.h"
#include "protocol/control_client.h"
#include "protocol/wire.h"

namespace schedfarm {
namespace {

using testing_support::ControlPeer;
using testing_support::StandInCoordinator;
using Clock = std::chrono::steady_clock;

// An endpoint on loopback where nothing listens: a port bound, then released.
std::string ClosedEndpoint() {
  zmq::context_t context;
  zmq::socket_t socket(context, zmq::socket_type::router);
  socket.set(zmq::sockopt::linger, 0);
  socket.bind("tcp://127.0.0.1:*");
  return socket.get(zmq::sockopt::last_endpoint);
}

ClientRequest StatusRequestFor(const std::string& campaign) {
  ClientRequest request;
  request.mutable_status()->set_campaign(campaign);
  return request;
}

ClientReply StatusReplyWith(const std::string& campaign_id) {
  ClientReply reply;
  reply.mutable_status()->add_campaigns()->mutable_campaign()->set_id(campaign_id);
  return reply;
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST(FarmClientTest, RequestIdsAre128BitHexAndDistinct) {
  std::set<std::string> ids;
  for (int i = 0; i < 100; ++i) {
    const std::string id = NewRequestId();
    ASSERT_EQ(id.size(), 32u);
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 100u);
}

TEST(FarmClientTest, ClosedPortRetriesThenNamesEndpointAndTime) {
  FarmClientOptions options;
  options.endpoint = ClosedEndpoint();
  options.try_timeout_ms = 300;
  options.total_timeout_ms = 1200;
  auto client = FarmClient::Create(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  const auto start = Clock::now();
  CallFailure failure = CallFailure::kKeyRejected;
  StatusOr<ClientReply> reply = (*client)->Call(StatusRequestFor(""), &failure);
  const double took = SecondsSince(start);
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(failure, CallFailure::kUnreachable);
  const std::string& message = reply.status().message();
  EXPECT_NE(message.find(options.endpoint), std::string::npos) << message;
  EXPECT_TRUE(std::regex_search(message, std::regex(" within 1\\.[0-9] s \\([3-4] tries\\)")))
      << message;
  EXPECT_GE(took, 1.15);
  EXPECT_LT(took, 3.0);
}

TEST(FarmClientTest, MalformedEndpointIsRefusedAtCreate) {
  FarmClientOptions options;
  options.endpoint = "tcp:/nowhere";
  auto client = FarmClient::Create(options);
  ASSERT_FALSE(client.ok());
  EXPECT_NE(client.status().message().find("tcp:/nowhere"), std::string::npos);
}

TEST(FarmClientTest, AnswerToSecondTryCarriesTheSameRequestIdOnANewConnection) {
  ControlPeer peer([](const ClientRequest& request, int n) -> std::optional<Envelope> {
    if (n == 0) return std::nullopt;  // the first try is lost
    return ControlPeer::Reply(request, StatusReplyWith("c-" + std::to_string(n)));
  });
  FarmClientOptions options;
  options.endpoint = peer.endpoint();
  options.try_timeout_ms = 300;
  options.total_timeout_ms = 5000;
  auto client = FarmClient::Create(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  StatusOr<ClientReply> reply = (*client)->Call(StatusRequestFor("c"));
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  ASSERT_EQ(reply->status().campaigns_size(), 1);
  EXPECT_EQ(reply->status().campaigns(0).campaign().id(), "c-1");
  const auto seen = peer.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].request.request_id(), seen[1].request.request_id());
  EXPECT_EQ(seen[0].request.request_id().size(), 32u);
  EXPECT_EQ(reply->request_id(), seen[0].request.request_id());
  EXPECT_EQ(seen[1].request.status().campaign(), "c");
  EXPECT_NE(seen[0].peer, seen[1].peer) << "the second try must come on a new connection";
}

TEST(FarmClientTest, StaleRepliesAreDroppedAndRefusalsReturned) {
  ControlPeer peer([](const ClientRequest& request, int n) -> std::optional<Envelope> {
    if (n == 0) {
      ClientRequest other = request;
      other.set_request_id("0123");
      return ControlPeer::Reply(other, StatusReplyWith("stale"));
    }
    return MakeErrorReply("frame too large");
  });
  FarmClientOptions options;
  options.endpoint = peer.endpoint();
  options.try_timeout_ms = 300;
  options.total_timeout_ms = 5000;
  auto client = FarmClient::Create(options);
  ASSERT_TRUE(client.ok());
  StatusOr<ClientReply> reply = (*client)->Call(StatusRequestFor(""));
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->code(), CLIENT_INVALID_ARGUMENT);
  EXPECT_NE(reply->error().find("frame too large"), std::string::npos) << reply->error();
  EXPECT_EQ(peer.seen().size(), 2u);
}

TEST(FarmClientTest, SurvivesACoordinatorRestart) {
  StandInCoordinator router;
  const std::string endpoint = router.endpoint();
  router.Close();
  std::thread restart([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    router.Rebind();
    const auto got = router.Receive(5000);
    if (got && got->envelope.has_client_request()) {
      router.Send(got->peer, ControlPeer::Reply(got->envelope.client_request(),
                                                StatusReplyWith("after-restart")));
    }
  });
  FarmClientOptions options;
  options.endpoint = endpoint;
  options.try_timeout_ms = 400;
  options.total_timeout_ms = 6000;
  auto client = FarmClient::Create(options);
  ASSERT_TRUE(client.ok());
  StatusOr<ClientReply> reply = (*client)->Call(StatusRequestFor(""));
  restart.join();
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->status().campaigns(0).campaign().id(), "after-restart");
}

// A CURVE ROUTER behind a ZAP allow-list that answers every request.
class CurveServer {
 public:
  explicit CurveServer(const std::vector<std::string>& allowed)
      : keys_(GenerateCurveKeyPair()), zap_(context_, allowed) {
    EXPECT_TRUE(zap_.Start().ok());
    socket_.set(zmq::sockopt::linger, 0);
    EXPECT_TRUE(MakeCurveServer(socket_, keys_).ok());
    socket_.bind("tcp://127.0.0.1:*");
    endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
    thread_ = std::thread([this] { Serve(); });
  }
  ~CurveServer() {
    stop_ = true;
    thread_.join();
    socket_.close();
    zap_.Stop();
  }
  const std::string& endpoint() const { return endpoint_; }
  const std::string& public_key() const { return keys_.public_key; }

 private:
  void Serve() {
    while (!stop_) {
      zmq::pollitem_t item = {socket_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(20));
      if (!(item.revents & ZMQ_POLLIN)) continue;
      zmq::message_t peer, body;
      (void)socket_.recv(peer);
      (void)socket_.recv(body);
      const DecodedFrame decoded = DecodeEnvelope(body.to_string_view());
      if (!decoded.ok() || !decoded.envelope.has_client_request()) continue;
      const std::string reply = EncodeEnvelope(
          ControlPeer::Reply(decoded.envelope.client_request(), StatusReplyWith("secure")));
      socket_.send(peer, zmq::send_flags::sndmore);
      socket_.send(zmq::buffer(reply));
    }
  }

  zmq::context_t context_;
  CurveKeyPair keys_;
  ZapAllowList zap_;
  zmq::socket_t socket_{context_, zmq::socket_type::router};
  std::string endpoint_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(FarmClientTest, CurveClientOnTheAllowListIsAnswered) {
  const CurveKeyPair mine = GenerateCurveKeyPair();
  CurveServer server({mine.public_key});
  FarmClientOptions options;
  options.endpoint = server.endpoint();
  options.own_keys = mine;
  options.server_public_key = server.public_key();
  auto client = FarmClient::Create(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  StatusOr<ClientReply> reply = (*client)->Call(StatusRequestFor(""));
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->status().campaigns(0).campaign().id(), "secure");
}

TEST(FarmClientTest, CurveClientOffTheAllowListIsToldAtOnce) {
  CurveServer server({GenerateCurveKeyPair().public_key});
  FarmClientOptions options;
  options.endpoint = server.endpoint();
  options.own_keys = GenerateCurveKeyPair();
  options.server_public_key = server.public_key();
  options.total_timeout_ms = 20000;
  auto client = FarmClient::Create(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  const auto start = Clock::now();
  CallFailure failure = CallFailure::kUnreachable;
  StatusOr<ClientReply> reply = (*client)->Call(StatusRequestFor(""), &failure);
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(failure, CallFailure::kKeyRejected);
  EXPECT_NE(reply.status().message().find("allow-list"), std::string::npos)
      << reply.status().message();
  EXPECT_LT(SecondsSince(start), 5.0);
}

TEST(FarmClientTest, CurveNeedsBothKeys) {
  FarmClientOptions options;
  options.own_keys = GenerateCurveKeyPair();
  EXPECT_FALSE(FarmClient::Create(options).ok());
}

}  // namespace
}  // namespace schedfarm
