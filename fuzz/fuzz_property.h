// What every fuzz harness shares: protobuf's log kept quiet (parse failures are
// expected by the thousand), and Require, a property every input must keep, whose
// violation is reported as a crash; RequireProtobufRoundTrip, the property of every
// accepted input that travels as a protobuf message.
#pragma once

#include <google/protobuf/stubs/logging.h>

#include <cstdio>
#include <cstdlib>

namespace schedfarm::fuzz {

inline const bool kQuietProtobuf = (google::protobuf::SetLogHandler(nullptr), true);

inline void Require(bool holds, const char* property) {
  if (holds) return;
  std::fprintf(stderr, "fuzz property violated: %s\n", property);
  std::abort();
}

template <class Message>
void RequireProtobufRoundTrip(const Message& message, const char* property) {
  Message decoded;
  Require(decoded.ParseFromString(message.SerializeAsString()), property);
}

}  // namespace schedfarm::fuzz
