// CURVE security for the farm's sockets (docs/ARCHITECTURE.md, secure mode): key pairs and their
// files, a ZAP handler that admits only the CURVE public keys of an allow-list, the
// socket options of a secure server and client, and a self-test proving the allow-list
// is enforced (with no ZAP handler running, libzmq admits any client with the server key).
#pragma once

#include <atomic>
#include <cstdint>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>
#include <zmq.hpp>

#include "common/status.h"

namespace schedfarm {

// The ZAP domain of the farm's secure server sockets.
inline constexpr char kZapDomain[] = "schedfarm";
// Length of a CURVE key in Z85 text (32 bytes).
inline constexpr size_t kZ85KeyLength = 40;

// A CURVE key pair, both keys as 40-character Z85 text.
struct CurveKeyPair {
  std::string public_key;
  std::string secret_key;
};

// A fresh random key pair (libsodium through zmq_curve_keypair).
CurveKeyPair GenerateCurveKeyPair();

// Whether `key` is a 40-character Z85 CURVE key; the error says what is wrong.
Status CheckZ85Key(const std::string& key);

// Key files hold one Z85 key on a line; lines that are empty or start with "# " are
// comments, and a key may be followed by " # comment". WriteKeyPair writes the secret
// key to `<path_base>.key` (mode 0600) and the public key to `<path_base>.pub`; it never
// overwrites an existing file. ReadKeyPair reads both back and checks that they belong
// together and that the secret file is not readable by group or others.
Status WriteKeyPair(const CurveKeyPair& keys, const std::string& path_base);
StatusOr<CurveKeyPair> ReadKeyPair(const std::string& path_base);
StatusOr<std::string> ReadPublicKey(const std::string& path);
// An allow-list file: any number of public keys (at least one), same syntax. Refused
// when group or others may write it (as a secret key is when they may read it).
StatusOr<std::vector<std::string>> ReadAllowList(const std::string& path);

// A ZAP handler (RFC 27) bound to inproc://zeromq.zap.01 in one context, on its own
// thread: a CURVE client whose public key is in the allow-list is accepted (200) with
// its Z85 public key as User-Id (read it with zmq_msg_gets(msg, "User-Id")); every
// other request is rejected (400). It judges every CURVE server socket of the context.
// Stop it (or destroy it) before the context is closed. Threads: its owner starts and
// stops it; the handler thread reads the allow-list, fixed before Start, and counts
// into atomics that any thread may read.
class ZapAllowList {
 public:
  // `allowed_public_keys` in Z85; checked by Start.
  ZapAllowList(zmq::context_t& context, std::vector<std::string> allowed_public_keys);
  ~ZapAllowList();
  ZapAllowList(const ZapAllowList&) = delete;
  ZapAllowList& operator=(const ZapAllowList&) = delete;

  // Returns once the handler is bound, or an error (a bad key, or another handler
  // already bound in this context).
  Status Start();
  // Stops and joins the handler thread; no-op when not running.
  void Stop();

  // Handshakes judged so far.
  int64_t accepted() const { return accepted_.load(); }
  int64_t rejected() const { return rejected_.load(); }

 private:
  void Run(std::promise<Status> bound);
  // The reply frames' status code, text and user id for one request.
  std::vector<std::string> Judge(const std::vector<zmq::message_t>& request);

  zmq::context_t& context_;
  std::vector<std::string> allowed_z85_;
  std::unordered_set<std::string> allowed_binary_;  // 32-byte keys, as ZAP sends them
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> accepted_{0};
  std::atomic<int64_t> rejected_{0};
};

// The client side of secure mode as daemons take it on their command line: their own
// key pair (`<key_base>.key` / `.pub`) and the coordinator's public key file.
struct CurveClientKeys {
  CurveKeyPair own;
  std::string server_public_key;
};
// Nothing when both paths are empty; an error when only one is given, naming the flag
// names `key_flag` and `server_flag`, or when a file is bad.
StatusOr<std::optional<CurveClientKeys>> ReadCurveClientKeys(const std::string& key_base,
                                                             const std::string& server_key_file,
                                                             const std::string& key_flag,
                                                             const std::string& server_flag);

// Makes `socket` a CURVE server in kZapDomain (call before bind).
Status MakeCurveServer(zmq::socket_t& socket, const CurveKeyPair& server_keys);
// Makes `socket` a CURVE client of the server with `server_public_key` (call before connect).
Status MakeCurveClient(zmq::socket_t& socket, const CurveKeyPair& own_keys,
                       const std::string& server_public_key);

// The startup self-test of a secure server: connects a client with a random key pair to
// `endpoint` (an address a client can connect to, e.g. tcp://127.0.0.1:5555) and returns
// OK only if the server rejects it during the handshake within `timeout_ms`. An error
// when the client is accepted (no ZAP handler: fail-open) or no verdict comes in time.
Status CheckZapEnforced(const std::string& server_public_key, const std::string& endpoint,
                        int timeout_ms = 3000);

}  // namespace schedfarm
