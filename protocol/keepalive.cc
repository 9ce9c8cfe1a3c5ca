#include "protocol/keepalive.h"

namespace schedfarm {

void SetTcpKeepalive(zmq::socket_t& socket) {
  socket.set(zmq::sockopt::tcp_keepalive, 1);
  socket.set(zmq::sockopt::tcp_keepalive_idle, kKeepaliveIdleSeconds);
  socket.set(zmq::sockopt::tcp_keepalive_intvl, kKeepaliveIntervalSeconds);
  socket.set(zmq::sockopt::tcp_keepalive_cnt, kKeepaliveProbes);
  socket.set(zmq::sockopt::tcp_maxrt, kTcpUserTimeoutSeconds * 1000);
}

}  // namespace schedfarm
