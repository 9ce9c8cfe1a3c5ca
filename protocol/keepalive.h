// Dead peers found in bounded time on the farm's sockets (the coordinator's ROUTER, the
// workers' and clients' DEALERs): a connection whose peer vanished without closing it (a
// host powered off, a pulled cable, a firewall or NAT that dropped it) is closed by the
// kernel, so it holds no queue or descriptor for long. An idle one by TCP keepalive:
// probed after 30 s of silence, closed after three unanswered probes 10 s apart. One
// with data waiting for the peer, which keepalive never probes and TCP's retransmissions
// would hold for many minutes, by a user timeout (ZMQ_TCP_MAXRT, TCP_USER_TIMEOUT on
// Linux): closed once sent data has gone unacknowledged for 30 s. The farm's own
// heartbeats decide liveness much sooner (kLiveness in protocol/wire.h); these free
// what they cannot.
#pragma once

#include <zmq.hpp>

namespace schedfarm {

inline constexpr int kKeepaliveIdleSeconds = 30;
inline constexpr int kKeepaliveIntervalSeconds = 10;
inline constexpr int kKeepaliveProbes = 3;
inline constexpr int kTcpUserTimeoutSeconds = 30;

// Sets the keepalive options and the user timeout; before connect or bind.
void SetTcpKeepalive(zmq::socket_t& socket);

}  // namespace schedfarm
