#include "protocol/security.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <utility>
#include <zmq_addon.hpp>

namespace schedfarm {
namespace {

constexpr char kZapEndpoint[] = "inproc://zeromq.zap.01";
constexpr char kZapVersion[] = "1.0";
constexpr size_t kBinaryKeyLength = 32;

// The 32 bytes of a valid Z85 key.
std::string DecodeZ85Key(const std::string& z85) {
  uint8_t binary[kBinaryKeyLength];
  zmq_z85_decode(binary, z85.c_str());
  return std::string(reinterpret_cast<const char*>(binary), kBinaryKeyLength);
}

std::string EncodeZ85Key(const std::string& binary) {
  char z85[kZ85KeyLength + 1];
  zmq_z85_encode(z85, reinterpret_cast<const uint8_t*>(binary.data()), binary.size());
  return z85;
}

std::string Trim(const std::string& text) {
  const char* space = " \t\r\n";
  const size_t begin = text.find_first_not_of(space);
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(space) - begin + 1);
}

bool IsComment(const std::string& line) {
  return line.empty() || line == "#" || line.rfind("# ", 0) == 0 || line.rfind("#\t", 0) == 0;
}

// The keys of a key file, in order; errors name the file and line.
StatusOr<std::vector<std::string>> ReadKeyLines(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::Error(path + ": cannot open (" + std::strerror(errno) + ")");
  std::vector<std::string> keys;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string trimmed = Trim(line);
    if (IsComment(trimmed)) continue;
    const size_t end = trimmed.find_first_of(" \t");
    const std::string key = trimmed.substr(0, end);
    const std::string rest = end == std::string::npos ? "" : Trim(trimmed.substr(end));
    const std::string where = path + ":" + std::to_string(number);
    if (!rest.empty() && rest[0] != '#') {
      return Status::Error(where + ": unexpected text after the key (comments start with '#')");
    }
    SCHEDFARM_RETURN_IF_ERROR(CheckZ85Key(key).WithContext(where));
    keys.push_back(key);
  }
  if (in.bad()) return Status::Error(path + ": read error");
  return keys;
}

StatusOr<std::string> ReadSingleKey(const std::string& path) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::vector<std::string> keys, ReadKeyLines(path));
  if (keys.size() != 1) {
    return Status::Error(path + ": expected exactly one key, found " + std::to_string(keys.size()));
  }
  return keys[0];
}

Status WriteNewFile(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return Status::Error(path + ": cannot create (" + std::strerror(errno) + ")");
  // Exactly `mode`, whatever the umask.
  bool ok = ::fchmod(fd, mode) == 0;
  size_t written = 0;
  while (ok && written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) written += static_cast<size_t>(n);
  }
  ok = ok && ::fsync(fd) == 0;
  const std::string error = ok ? "" : std::strerror(errno);
  ok = (::close(fd) == 0) && ok;
  if (!ok) return Status::Error(path + ": cannot write (" + error + ")");
  return Status::Ok();
}

// The payload of one monitor event: its id and value.
bool ReadMonitorEvent(zmq::socket_t& monitor, uint16_t* event, uint32_t* value) {
  zmq::message_t header;
  zmq::message_t address;
  if (!monitor.recv(header, zmq::recv_flags::dontwait)) return false;
  if (header.more()) (void)monitor.recv(address);
  if (header.size() < 6) return false;
  std::memcpy(event, header.data(), sizeof(*event));
  std::memcpy(value, static_cast<const char*>(header.data()) + 2, sizeof(*value));
  return true;
}

}  // namespace

CurveKeyPair GenerateCurveKeyPair() {
  char public_key[kZ85KeyLength + 1];
  char secret_key[kZ85KeyLength + 1];
  if (zmq_curve_keypair(public_key, secret_key) != 0) {
    // Only without libsodium (ENOTSUP); the build requires CURVE support.
    throw zmq::error_t();
  }
  return {public_key, secret_key};
}

Status CheckZ85Key(const std::string& key) {
  if (key.size() != kZ85KeyLength) {
    return Status::Error("a CURVE key is " + std::to_string(kZ85KeyLength) +
                         " Z85 characters, found " + std::to_string(key.size()));
  }
  uint8_t binary[kBinaryKeyLength];
  if (zmq_z85_decode(binary, key.c_str()) == nullptr) {
    return Status::Error("'" + key + "' is not Z85 text");
  }
  return Status::Ok();
}

Status WriteKeyPair(const CurveKeyPair& keys, const std::string& path_base) {
  SCHEDFARM_RETURN_IF_ERROR(CheckZ85Key(keys.public_key).WithContext("public key"));
  SCHEDFARM_RETURN_IF_ERROR(CheckZ85Key(keys.secret_key).WithContext("secret key"));
  const std::string secret_path = path_base + ".key";
  const std::string public_path = path_base + ".pub";
  for (const std::string& path : {secret_path, public_path}) {
    if (::access(path.c_str(), F_OK) == 0) {
      return Status::Error(path + ": already exists (key files are never overwritten)");
    }
  }
  SCHEDFARM_RETURN_IF_ERROR(WriteNewFile(
      secret_path, "# schedfarm CURVE secret key: keep private\n" + keys.secret_key + "\n", 0600));
  return WriteNewFile(public_path, "# schedfarm CURVE public key\n" + keys.public_key + "\n", 0644);
}

StatusOr<CurveKeyPair> ReadKeyPair(const std::string& path_base) {
  const std::string secret_path = path_base + ".key";
  const std::string public_path = path_base + ".pub";
  struct stat info;
  if (::stat(secret_path.c_str(), &info) != 0) {
    return Status::Error(secret_path + ": cannot open (" + std::strerror(errno) + ")");
  }
  if ((info.st_mode & 077) != 0) {
    std::ostringstream mode;
    mode << std::oct << (info.st_mode & 0777);
    return Status::Error(secret_path + ": secret key is accessible by group or others (mode " +
                         mode.str() + "); chmod 600 it");
  }
  CurveKeyPair keys;
  SCHEDFARM_ASSIGN_OR_RETURN(keys.secret_key, ReadSingleKey(secret_path));
  SCHEDFARM_ASSIGN_OR_RETURN(keys.public_key, ReadSingleKey(public_path));
  char derived[kZ85KeyLength + 1];
  if (zmq_curve_public(derived, keys.secret_key.c_str()) != 0 || keys.public_key != derived) {
    return Status::Error(public_path + ": is not the public key of the secret key in " +
                         secret_path);
  }
  return keys;
}

StatusOr<std::string> ReadPublicKey(const std::string& path) { return ReadSingleKey(path); }

StatusOr<std::vector<std::string>> ReadAllowList(const std::string& path) {
  // Whoever can write the list can admit a key: only its owner may.
  struct stat info;
  if (::stat(path.c_str(), &info) == 0 && (info.st_mode & 022) != 0) {
    std::ostringstream mode;
    mode << std::oct << (info.st_mode & 0777);
    return Status::Error(path + ": the allow-list is writable by group or others (mode " +
                         mode.str() + "), who could admit their own keys; chmod go-w it");
  }
  SCHEDFARM_ASSIGN_OR_RETURN(std::vector<std::string> keys, ReadKeyLines(path));
  if (keys.empty()) return Status::Error(path + ": the allow-list has no keys");
  return keys;
}

ZapAllowList::ZapAllowList(zmq::context_t& context, std::vector<std::string> allowed_public_keys)
    : context_(context), allowed_z85_(std::move(allowed_public_keys)) {}

ZapAllowList::~ZapAllowList() { Stop(); }

Status ZapAllowList::Start() {
  if (thread_.joinable()) return Status::Error("the ZAP handler is already running");
  allowed_binary_.clear();
  for (size_t i = 0; i < allowed_z85_.size(); ++i) {
    SCHEDFARM_RETURN_IF_ERROR(
        CheckZ85Key(allowed_z85_[i]).WithContext("allow-list key " + std::to_string(i + 1)));
    allowed_binary_.insert(DecodeZ85Key(allowed_z85_[i]));
  }
  stop_ = false;
  std::promise<Status> bound;
  std::future<Status> result = bound.get_future();
  thread_ = std::thread([this, bound = std::move(bound)]() mutable { Run(std::move(bound)); });
  Status status = result.get();
  if (!status.ok()) thread_.join();
  return status;
}

void ZapAllowList::Stop() {
  if (!thread_.joinable()) return;
  stop_ = true;
  thread_.join();
}

void ZapAllowList::Run(std::promise<Status> bound) {
  std::unique_ptr<zmq::socket_t> socket;
  try {
    socket = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::rep);
    socket->set(zmq::sockopt::linger, 0);
    socket->bind(kZapEndpoint);
  } catch (const zmq::error_t& error) {
    bound.set_value(Status::Error(std::string("cannot bind the ZAP handler on ") + kZapEndpoint +
                                  ": " + error.what()));
    return;
  }
  bound.set_value(Status::Ok());
  try {
    while (!stop_) {
      zmq::pollitem_t item = {socket->handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(50));
      if (!(item.revents & ZMQ_POLLIN)) continue;
      std::vector<zmq::message_t> request;
      if (!zmq::recv_multipart(*socket, std::back_inserter(request))) continue;
      const std::vector<std::string> reply = Judge(request);
      std::vector<zmq::const_buffer> frames;
      for (const std::string& frame : reply) frames.push_back(zmq::buffer(frame));
      zmq::send_multipart(*socket, frames);
    }
  } catch (const zmq::error_t&) {
    // The context was terminated under the handler: nothing left to judge.
  }
}

std::vector<std::string> ZapAllowList::Judge(const std::vector<zmq::message_t>& request) {
  // Request: version, request id, domain, address, routing id, mechanism, credentials...
  // Reply: version, request id, status code, status text, user id, metadata.
  const std::string request_id = request.size() > 1 ? request[1].to_string() : "";
  if (request.size() < 6 || request[0].to_string_view() != kZapVersion) {
    ++rejected_;
    return {kZapVersion, request_id, "500", "malformed ZAP request", "", ""};
  }
  if (request[5].to_string_view() != "CURVE" || request.size() != 7 ||
      request[6].size() != kBinaryKeyLength) {
    ++rejected_;
    return {kZapVersion, request_id, "400", "CURVE required", "", ""};
  }
  const std::string client_key = request[6].to_string();
  if (allowed_binary_.count(client_key) == 0) {
    ++rejected_;
    return {kZapVersion, request_id, "400", "public key not in the allow-list", "", ""};
  }
  ++accepted_;
  return {kZapVersion, request_id, "200", "OK", EncodeZ85Key(client_key), ""};
}

StatusOr<std::optional<CurveClientKeys>> ReadCurveClientKeys(const std::string& key_base,
                                                             const std::string& server_key_file,
                                                             const std::string& key_flag,
                                                             const std::string& server_flag) {
  if (key_base.empty() && server_key_file.empty()) return std::optional<CurveClientKeys>();
  if (key_base.empty() || server_key_file.empty()) {
    return Status::Error(key_flag + " and " + server_flag + " go together (secure mode)");
  }
  CurveClientKeys keys;
  StatusOr<CurveKeyPair> own = ReadKeyPair(key_base);
  if (!own.ok()) return own.status().WithContext(key_flag);
  keys.own = *own;
  StatusOr<std::string> server = ReadPublicKey(server_key_file);
  if (!server.ok()) return server.status().WithContext(server_flag);
  keys.server_public_key = *server;
  return std::optional<CurveClientKeys>(std::move(keys));
}

Status MakeCurveServer(zmq::socket_t& socket, const CurveKeyPair& server_keys) {
  SCHEDFARM_RETURN_IF_ERROR(CheckZ85Key(server_keys.secret_key).WithContext("server secret key"));
  socket.set(zmq::sockopt::curve_server, true);
  socket.set(zmq::sockopt::curve_secretkey, server_keys.secret_key);
  socket.set(zmq::sockopt::zap_domain, kZapDomain);
  return Status::Ok();
}

Status MakeCurveClient(zmq::socket_t& socket, const CurveKeyPair& own_keys,
                       const std::string& server_public_key) {
  SCHEDFARM_RETURN_IF_ERROR(CheckZ85Key(server_public_key).WithContext("server public key"));
  SCHEDFARM_RETURN_IF_ERROR(CheckZ85Key(own_keys.public_key).WithContext("client public key"));
  SCHEDFARM_RETURN_IF_ERROR(CheckZ85Key(own_keys.secret_key).WithContext("client secret key"));
  socket.set(zmq::sockopt::curve_serverkey, server_public_key);
  socket.set(zmq::sockopt::curve_publickey, own_keys.public_key);
  socket.set(zmq::sockopt::curve_secretkey, own_keys.secret_key);
  return Status::Ok();
}

Status CheckZapEnforced(const std::string& server_public_key, const std::string& endpoint,
                        int timeout_ms) {
  const std::string where = "ZAP self-test of " + endpoint;
  zmq::context_t context;
  zmq::socket_t client(context, zmq::socket_type::dealer);
  client.set(zmq::sockopt::linger, 0);
  SCHEDFARM_RETURN_IF_ERROR(
      MakeCurveClient(client, GenerateCurveKeyPair(), server_public_key).WithContext(where));
  constexpr char kMonitorEndpoint[] = "inproc://schedfarm.zap-self-test";
  if (zmq_socket_monitor(client.handle(), kMonitorEndpoint,
                         ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                             ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                             ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) != 0) {
    return Status::Error(where + ": cannot monitor the client socket");
  }
  zmq::socket_t monitor(context, zmq::socket_type::pair);
  monitor.set(zmq::sockopt::linger, 0);
  monitor.connect(kMonitorEndpoint);
  try {
    client.connect(endpoint);
  } catch (const zmq::error_t& error) {
    return Status::Error(where + ": cannot connect (" + error.what() + ")");
  }
  Status verdict =
      Status::Error(where + ": no handshake verdict within " + std::to_string(timeout_ms) +
                    " ms (is a CURVE server with this public key bound there?)");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool decided = false;
  while (!decided && std::chrono::steady_clock::now() < deadline) {
    zmq::pollitem_t item = {monitor.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(20));
    uint16_t event = 0;
    uint32_t value = 0;
    while (!decided && ReadMonitorEvent(monitor, &event, &value)) {
      if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
        verdict = Status::Ok();
        decided = true;
      } else if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
        verdict = Status::Error(where +
                                ": a client with a random CURVE key was accepted; no ZAP "
                                "handler enforces the allow-list");
        decided = true;
      } else {
        verdict = Status::Error(where +
                                ": the handshake failed without an authentication "
                                "verdict (event " +
                                std::to_string(event) + ", wrong server key?)");
      }
    }
  }
  zmq_socket_monitor(client.handle(), nullptr, 0);
  return verdict;
}

}  // namespace schedfarm
