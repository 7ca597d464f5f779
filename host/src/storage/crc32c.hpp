// CRC-32C (Castagnoli), reflected, as TFRecord framing and hookhost checkpoints use it: Boost.CRC's
// parameterised CRC with polynomial 0x1EDC6F41, fed in one piece or chunk by chunk.
#pragma once

#include <boost/crc.hpp>

namespace hookhost {

using Crc32c = boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>;

}  // namespace hookhost
