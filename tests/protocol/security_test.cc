#include "protocol/security.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "protocol/keepalive.h"

namespace schedfarm {
// One suite, "security", so that `ctest -R security` selects exactly these tests.
namespace {

// A fresh directory for key files.
std::string MakeTempDir() {
  std::string pattern = ::testing::TempDir() + "schedfarm_security_XXXXXX";
  const char* dir = mkdtemp(pattern.data());
  EXPECT_NE(dir, nullptr);
  return pattern;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

// A secure ROUTER server on a free loopback port.
struct Server {
  explicit Server(zmq::context_t& context) : socket(context, zmq::socket_type::router) {
    socket.set(zmq::sockopt::linger, 0);
    EXPECT_TRUE(MakeCurveServer(socket, keys).ok());
    socket.bind("tcp://127.0.0.1:*");
    endpoint = socket.get(zmq::sockopt::last_endpoint);
  }

  // The next message's payload frame, or nothing within `timeout_ms`.
  std::optional<zmq::message_t> Receive(int timeout_ms) {
    zmq::pollitem_t item = {socket.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(timeout_ms));
    if (!(item.revents & ZMQ_POLLIN)) return std::nullopt;
    std::vector<zmq::message_t> frames;
    EXPECT_TRUE(zmq::recv_multipart(socket, std::back_inserter(frames)));
    EXPECT_EQ(frames.size(), 2u);
    return std::move(frames.back());
  }

  CurveKeyPair keys = GenerateCurveKeyPair();
  zmq::socket_t socket;
  std::string endpoint;
};

// A DEALER client with `keys` that connects to `server` and sends `payload`.
std::unique_ptr<zmq::socket_t> SendFrom(zmq::context_t& context, const Server& server,
                                        const CurveKeyPair& keys, const std::string& payload) {
  auto client = std::make_unique<zmq::socket_t>(context, zmq::socket_type::dealer);
  client->set(zmq::sockopt::linger, 0);
  EXPECT_TRUE(MakeCurveClient(*client, keys, server.keys.public_key).ok());
  client->connect(server.endpoint);
  client->send(zmq::buffer(payload), zmq::send_flags::dontwait);
  return client;
}

TEST(CurveSecurity, KeysGeneratedPairsAreValidZ85AndDistinct) {
  ASSERT_EQ(zmq_has("curve"), 1);
  const CurveKeyPair a = GenerateCurveKeyPair();
  const CurveKeyPair b = GenerateCurveKeyPair();
  EXPECT_TRUE(CheckZ85Key(a.public_key).ok());
  EXPECT_TRUE(CheckZ85Key(a.secret_key).ok());
  EXPECT_NE(a.public_key, b.public_key);
  EXPECT_NE(a.secret_key, b.secret_key);
  char derived[kZ85KeyLength + 1];
  ASSERT_EQ(zmq_curve_public(derived, a.secret_key.c_str()), 0);
  EXPECT_EQ(a.public_key, derived);
}

TEST(CurveSecurity, KeysFilesRoundTripWithPrivateSecret) {
  const std::string base = MakeTempDir() + "/worker";
  const CurveKeyPair keys = GenerateCurveKeyPair();
  ASSERT_TRUE(WriteKeyPair(keys, base).ok());
  struct stat info;
  ASSERT_EQ(stat((base + ".key").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);

  const StatusOr<CurveKeyPair> read = ReadKeyPair(base);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->public_key, keys.public_key);
  EXPECT_EQ(read->secret_key, keys.secret_key);
  const StatusOr<std::string> public_key = ReadPublicKey(base + ".pub");
  ASSERT_TRUE(public_key.ok()) << public_key.status().ToString();
  EXPECT_EQ(*public_key, keys.public_key);

  const Status again = WriteKeyPair(GenerateCurveKeyPair(), base);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.message().find(base + ".key"), std::string::npos) << again.message();
  EXPECT_EQ(ReadKeyPair(base)->secret_key, keys.secret_key);
}

// The error of reading `path` as a public key names the file and contains `what`.
void ExpectPublicKeyError(const std::string& path, const std::string& what) {
  const StatusOr<std::string> read = ReadPublicKey(path);
  ASSERT_FALSE(read.ok()) << path;
  EXPECT_NE(read.status().message().find(path), std::string::npos) << read.status().message();
  EXPECT_NE(read.status().message().find(what), std::string::npos) << read.status().message();
}

TEST(CurveSecurity, KeysBadFilesAreRejectedNamingTheFile) {
  const std::string dir = MakeTempDir();
  ExpectPublicKeyError(dir + "/missing.pub", "cannot open");
  WriteText(dir + "/short.pub", "abc\n");
  ExpectPublicKeyError(dir + "/short.pub", "40 Z85 characters, found 3");
  const std::string not_z85(kZ85KeyLength, '~');
  WriteText(dir + "/garbage.pub", "# comment\n" + not_z85 + "\n");
  ExpectPublicKeyError(dir + "/garbage.pub", "garbage.pub:2: '" + not_z85 + "' is not Z85");
  WriteText(dir + "/empty.pub", "# only a comment\n\n");
  ExpectPublicKeyError(dir + "/empty.pub", "expected exactly one key, found 0");
  const std::string key = GenerateCurveKeyPair().public_key;
  WriteText(dir + "/trailing.pub", key + " junk\n");
  ExpectPublicKeyError(dir + "/trailing.pub", "unexpected text after the key");

  // A secret readable by others, and a public key of another pair.
  const std::string base = dir + "/node";
  ASSERT_TRUE(WriteKeyPair(GenerateCurveKeyPair(), base).ok());
  ASSERT_EQ(chmod((base + ".key").c_str(), 0644), 0);
  StatusOr<CurveKeyPair> read = ReadKeyPair(base);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find(base + ".key: secret key is accessible"),
            std::string::npos)
      << read.status().message();
  ASSERT_EQ(chmod((base + ".key").c_str(), 0600), 0);
  ASSERT_TRUE(ReadKeyPair(base).ok());
  ASSERT_EQ(remove((base + ".pub").c_str()), 0);
  WriteText(base + ".pub", key + "\n");
  read = ReadKeyPair(base);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find(base + ".pub: is not the public key"), std::string::npos)
      << read.status().message();
}

// Keepalive and the user timeout are set as protocol/keepalive.h says on every farm
// socket it is given (tests/ops/netns_rig_test.sh shows the user timeout close a link cut
// with data waiting).
TEST(TcpKeepalive, SetsProbesAfterThirtySecondsOfSilenceAndAUserTimeout) {
  zmq::context_t context;
  zmq::socket_t socket(context, zmq::socket_type::dealer);
  EXPECT_EQ(socket.get(zmq::sockopt::tcp_keepalive), -1) << "ZeroMQ's default: the OS's";
  EXPECT_EQ(socket.get(zmq::sockopt::tcp_maxrt), 0) << "ZeroMQ's default: none";
  SetTcpKeepalive(socket);
  EXPECT_EQ(socket.get(zmq::sockopt::tcp_maxrt), 30000);
  EXPECT_EQ(socket.get(zmq::sockopt::tcp_keepalive), 1);
  EXPECT_EQ(socket.get(zmq::sockopt::tcp_keepalive_idle), 30);
  EXPECT_EQ(socket.get(zmq::sockopt::tcp_keepalive_intvl), 10);
  EXPECT_EQ(socket.get(zmq::sockopt::tcp_keepalive_cnt), 3);
}

TEST(CurveSecurity, KeysAllowListFileWithComments) {
  const std::string dir = MakeTempDir();
  const std::string a = GenerateCurveKeyPair().public_key;
  const std::string b = GenerateCurveKeyPair().public_key;
  WriteText(dir + "/allow", "# workers\n\n  " + a + "  # worker-1\n" + b + "\n#\n");
  ASSERT_EQ(chmod((dir + "/allow").c_str(), 0644), 0);
  const StatusOr<std::vector<std::string>> keys = ReadAllowList(dir + "/allow");
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ(*keys, (std::vector<std::string>{a, b}));
  // Writable by group or by others: whoever can write it could admit a key.
  for (const mode_t mode : {0664, 0646}) {
    ASSERT_EQ(chmod((dir + "/allow").c_str(), mode), 0);
    const StatusOr<std::vector<std::string>> open = ReadAllowList(dir + "/allow");
    ASSERT_FALSE(open.ok()) << std::oct << mode;
    EXPECT_NE(open.status().message().find(dir + "/allow: the allow-list is writable by group or "
                                           "others"),
              std::string::npos)
        << open.status().message();
  }
  ASSERT_EQ(chmod((dir + "/allow").c_str(), 0600), 0);
  EXPECT_TRUE(ReadAllowList(dir + "/allow").ok()) << "its owner alone may write it";

  WriteText(dir + "/bad", a + "\n#not-a-comment\n");
  StatusOr<std::vector<std::string>> bad = ReadAllowList(dir + "/bad");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(dir + "/bad:2:"), std::string::npos)
      << bad.status().message();
  WriteText(dir + "/none", "# nobody\n");
  bad = ReadAllowList(dir + "/none");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("no keys"), std::string::npos) << bad.status().message();
}

TEST(CurveSecurity, ZapAllowedClientArrivesWithItsKeyAsUserId) {
  zmq::context_t context;
  const CurveKeyPair worker = GenerateCurveKeyPair();
  ZapAllowList handler(context, {GenerateCurveKeyPair().public_key, worker.public_key});
  ASSERT_TRUE(handler.Start().ok());
  Server server(context);

  zmq::context_t client_context;
  auto client = SendFrom(client_context, server, worker, "register");
  std::optional<zmq::message_t> message = server.Receive(5000);
  ASSERT_TRUE(message.has_value());
  EXPECT_EQ(message->to_string(), "register");
  const char* user_id = message->gets("User-Id");
  ASSERT_NE(user_id, nullptr);
  EXPECT_EQ(std::string(user_id), worker.public_key);
  EXPECT_GE(handler.accepted(), 1);
  EXPECT_EQ(handler.rejected(), 0);
}

TEST(CurveSecurity, ZapUnknownKeysNeverGetAMessageThrough) {
  zmq::context_t context;
  const CurveKeyPair worker = GenerateCurveKeyPair();
  ZapAllowList handler(context, {worker.public_key});
  ASSERT_TRUE(handler.Start().ok());
  Server server(context);

  zmq::context_t client_context;
  constexpr int kIntruders = 20;
  std::vector<std::unique_ptr<zmq::socket_t>> intruders;
  for (int i = 0; i < kIntruders; ++i) {
    intruders.push_back(SendFrom(client_context, server, GenerateCurveKeyPair(), "submit"));
  }
  // The server sees nothing while every intruder is refused at least once.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (handler.rejected() < kIntruders && std::chrono::steady_clock::now() < deadline) {
    EXPECT_FALSE(server.Receive(50).has_value()) << "a client with an unknown key got through";
  }
  EXPECT_GE(handler.rejected(), kIntruders);
  EXPECT_FALSE(server.Receive(1000).has_value()) << "a client with an unknown key got through";
  EXPECT_EQ(handler.accepted(), 0);

  // The server was listening all along: the allowed worker still gets through.
  auto client = SendFrom(client_context, server, worker, "result");
  std::optional<zmq::message_t> message = server.Receive(5000);
  ASSERT_TRUE(message.has_value());
  EXPECT_EQ(message->to_string(), "result");
  EXPECT_EQ(std::string(message->gets("User-Id")), worker.public_key);
}

TEST(CurveSecurity, ZapSelfTestDetectsFailOpenWithoutHandler) {
  zmq::context_t context;
  Server server(context);
  const Status open = CheckZapEnforced(server.keys.public_key, server.endpoint);
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.message().find("was accepted"), std::string::npos) << open.message();
  EXPECT_NE(open.message().find(server.endpoint), std::string::npos) << open.message();

  ZapAllowList handler(context, {GenerateCurveKeyPair().public_key});
  ASSERT_TRUE(handler.Start().ok());
  const Status enforced = CheckZapEnforced(server.keys.public_key, server.endpoint);
  EXPECT_TRUE(enforced.ok()) << enforced.ToString();
  EXPECT_GE(handler.rejected(), 1);
}

TEST(CurveSecurity, ZapSelfTestFailsWhenNothingAnswers) {
  zmq::context_t context;
  std::string endpoint;
  {
    Server gone(context);
    endpoint = gone.endpoint;
  }
  const Status status = CheckZapEnforced(GenerateCurveKeyPair().public_key, endpoint, 300);
  ASSERT_FALSE(status.ok());
  // No verdict, or a failed handshake while the closed socket winds down: never OK.
  EXPECT_NE(status.message().find(endpoint), std::string::npos) << status.message();
  EXPECT_EQ(status.message().find("was accepted"), std::string::npos) << status.message();
}

TEST(CurveSecurity, ZapBadKeyOrSecondHandlerIsRefused) {
  zmq::context_t context;
  ZapAllowList bad(context, {"not a key"});
  const Status status = bad.Start();
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("allow-list key 1"), std::string::npos) << status.message();

  ZapAllowList first(context, {GenerateCurveKeyPair().public_key});
  ASSERT_TRUE(first.Start().ok());
  ZapAllowList second(context, {GenerateCurveKeyPair().public_key});
  const Status twice = second.Start();
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.message().find("zeromq.zap.01"), std::string::npos) << twice.message();
  first.Stop();
  first.Stop();
}

}  // namespace
}  // namespace schedfarm
