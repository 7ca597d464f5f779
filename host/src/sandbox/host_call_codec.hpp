// How each kind of argument of a host function (services/host_functions.hpp's arg::) crosses from
// a hookhost-runner to the host and back, both halves side by side:
//   put          runner: the plugin's arguments into the request;
//   Decoded      host: read from the request, handed to the real function as C arguments
//                (`args()`), then its part of the reply (`put_reply`); `refusal()` is a call the
//                sandbox cannot carry, refused as the function's failure with that text;
//   Answer       runner: the reply's part read back (`read`, checked against the plugin's
//                arguments) and written into the plugin's memory (`apply`) once the whole reply
//                was read.
// A pointer the plugin passed as NULL arrives as NULL, so the host's own checks decide.
#pragma once

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "protocol.hpp"
#include "services/host_functions.hpp"
#include "view_codec.hpp"

namespace hookhost::sandbox {

// A non-NULL pointer for a buffer of no bytes the plugin passed as non-NULL.
inline char kEmptyBuffer[1] = {};

template <class Arg>
struct Codec;

// Nothing to read back, nothing to write.
template <class... C>
struct NoAnswer {
  bool read(Reader&, C...) { return true; }
  void apply(C...) const {}
};

template <class T>
struct Codec<arg::Value<T>> {
  static void put(Writer& w, T value) { w.put<T>(value); }
  struct Decoded {
    T value{};
    bool read(Reader& in) {
      value = in.get<T>();
      return true;
    }
    std::string refusal() const { return {}; }
    std::tuple<T> args() { return {value}; }
    void put_reply(Writer&) const {}
  };
  using Answer = NoAnswer<T>;
};

template <std::size_t Max>
struct Codec<arg::Text<Max>> {
  static void put(Writer& w, const char* text) {
    const std::string_view bounded = bounded_c_text(text, Max);
    w.put_optional(text ? bounded.data() : nullptr, bounded.size());
  }
  struct Decoded {
    bool present = false;
    std::string text;
    bool read(Reader& in) {
      std::string_view bytes;
      present = in.get_optional(&bytes);
      text.assign(bytes);
      return true;
    }
    std::string refusal() const { return {}; }
    std::tuple<const char*> args() { return {present ? text.c_str() : nullptr}; }
    void put_reply(Writer&) const {}
  };
  using Answer = NoAnswer<const char*>;
};

// u64 size, then at most Max of the bytes: all the function ever reads, so its line and its
// "cut at" note are the in-process ones.
template <std::size_t Max>
struct Codec<arg::CutText<Max>> {
  static void put(Writer& w, const char* text, std::size_t size) {
    w.put<uint64_t>(size);
    w.put_optional(text, text ? std::min<std::size_t>(size, Max) : 0);
  }
  struct Decoded {
    uint64_t size = 0;
    bool present = false;
    std::string text;
    bool read(Reader& in) {
      size = in.get<uint64_t>();
      std::string_view bytes;
      present = in.get_optional(&bytes);
      text.assign(bytes);
      return !present || text.size() == size || (text.size() == Max && size > Max);
    }
    std::string refusal() const { return {}; }
    std::tuple<const char*, std::size_t> args() {
      return {present ? text.data() : nullptr, static_cast<std::size_t>(size)};
    }
    void put_reply(Writer&) const {}
  };
  using Answer = NoAnswer<const char*, std::size_t>;
};

// u8 has bytes, u64 size, u8 carried, the bytes when carried (not NULL and at most Max).
template <std::size_t Max>
struct Codec<arg::Bytes<Max>> {
  static void put(Writer& w, const void* data, std::size_t size) {
    const bool carried = data && size <= Max;
    w.put<uint8_t>(data ? 1 : 0);
    w.put<uint64_t>(size);
    w.put<uint8_t>(carried ? 1 : 0);
    if (carried) w.put_bytes(data, size);
  }
  struct Decoded {
    bool present = false;
    bool carried = false;
    uint64_t size = 0;
    std::string bytes;
    bool read(Reader& in) {
      present = in.get<uint8_t>() != 0;
      size = in.get<uint64_t>();
      carried = in.get<uint8_t>() != 0;
      if (carried) bytes.assign(in.get_bytes());
      return !carried || (present && bytes.size() == size);
    }
    std::string refusal() const {
      if (!present || carried) return {};
      // The function is refused, so what it would have replaced is kept (state_put's words).
      return std::to_string(size) + " bytes is more than a sandboxed hook can send (" +
             std::to_string(Max) + " bytes); the previous state is kept";
    }
    std::tuple<const void*, std::size_t> args() {
      const void* data = !present ? nullptr : size ? bytes.data() : kEmptyBuffer;
      return {data, static_cast<std::size_t>(size)};
    }
    void put_reply(Writer&) const {}
  };
  using Answer = NoAnswer<const void*, std::size_t>;
};

// u8 present, the plugin's value; the reply has the value after the call.
template <class T>
struct Codec<arg::Out<T>> {
  static void put(Writer& w, T* out) {
    w.put<uint8_t>(out ? 1 : 0);
    w.put<T>(out ? *out : T{});
  }
  struct Decoded {
    bool present = false;
    T value{};
    bool read(Reader& in) {
      present = in.get<uint8_t>() != 0;
      value = in.get<T>();
      return true;
    }
    std::string refusal() const { return {}; }
    std::tuple<T*> args() { return {present ? &value : nullptr}; }
    void put_reply(Writer& reply) const { reply.put<T>(value); }
  };
  struct Answer {
    T value{};
    bool read(Reader& in, T*) {
      value = in.get<T>();
      return true;
    }
    void apply(T* out) const {
      if (out) *out = value;
    }
  };
};

// u8 present, u64 capacity. The host's buffer starts without a NUL, so the reply can say whether
// the function wrote a text (u8) and which.
template <std::size_t Max>
struct Codec<arg::TextOut<Max>> {
  static void put(Writer& w, char* out, std::size_t capacity) {
    w.put<uint8_t>(out ? 1 : 0);
    w.put<uint64_t>(capacity);
  }
  struct Decoded {
    bool present = false;
    std::vector<char> buffer;
    bool read(Reader& in) {
      present = in.get<uint8_t>() != 0;
      const auto capacity = in.get<uint64_t>();
      if (present) buffer.assign(std::min<uint64_t>(capacity, Max), '\x7f');
      return true;
    }
    std::string refusal() const { return {}; }
    std::tuple<char*, std::size_t> args() {
      if (!present) return {nullptr, 0};
      return {buffer.empty() ? kEmptyBuffer : buffer.data(), buffer.size()};
    }
    void put_reply(Writer& reply) const {
      const auto nul = std::find(buffer.begin(), buffer.end(), '\0');
      reply.put<uint8_t>(nul != buffer.end() ? 1 : 0);
      reply.put_bytes(buffer.data(), nul != buffer.end() ? nul - buffer.begin() : 0);
    }
  };
  struct Answer {
    bool written = false;
    std::string text;
    bool read(Reader& in, char* out, std::size_t capacity) {
      written = in.get<uint8_t>() != 0;
      text.assign(in.get_bytes());
      return !written || (out && text.size() < capacity);
    }
    void apply(char* out, std::size_t) const {
      if (!written) return;
      std::memcpy(out, text.data(), text.size());
      out[text.size()] = '\0';
    }
  };
};

// u8 has values, u64 count, u8 carried, then count doubles when carried (not NULL, 0 < count <=
// Max); the reply carries them back. Otherwise the host's own check refuses the count before any
// value is read.
template <std::size_t Max>
struct Codec<arg::Doubles<Max>> {
  static bool carried(const double* values, std::size_t count) {
    return values && count > 0 && count <= Max;
  }
  static void put(Writer& w, double* values, std::size_t count) {
    w.put<uint8_t>(values ? 1 : 0);
    w.put<uint64_t>(count);
    w.put<uint8_t>(carried(values, count) ? 1 : 0);
    if (carried(values, count)) w.put_bytes(values, count * sizeof(double));
  }
  struct Decoded {
    bool present = false;
    bool carried = false;
    uint64_t count = 0;
    std::vector<double> values;
    double empty = 0;
    bool read(Reader& in) {
      present = in.get<uint8_t>() != 0;
      count = in.get<uint64_t>();
      carried = in.get<uint8_t>() != 0;
      if (!carried) return !present || count > Max || count == 0;
      const std::string_view bytes = in.get_bytes();
      if (!present || count > Max || count == 0 || bytes.size() != count * sizeof(double))
        return false;
      values.resize(count);
      std::memcpy(values.data(), bytes.data(), bytes.size());
      return true;
    }
    std::string refusal() const { return {}; }
    std::tuple<double*, std::size_t> args() {
      double* data = !present ? nullptr : carried ? values.data() : &empty;
      return {data, static_cast<std::size_t>(count)};
    }
    void put_reply(Writer& reply) const {
      reply.put_bytes(values.data(), values.size() * sizeof(double));
    }
  };
  struct Answer {
    std::string bytes;
    bool read(Reader& in, double* values, std::size_t count) {
      bytes.assign(in.get_bytes());
      return bytes.size() == (carried(values, count) ? count * sizeof(double) : 0);
    }
    void apply(double* values, std::size_t) const {
      if (!bytes.empty()) std::memcpy(values, bytes.data(), bytes.size());
    }
  };
};

// The view's fields and the bytes a valid view makes readable (view_codec.hpp).
template <>
struct Codec<arg::View> {
  static void put(Writer& w, const hh_tensor* view) { encode_view(w, view); }
  struct Decoded {
    DecodedView view;
    std::string why;
    bool read(Reader& in) { return decode_view(in, view, &why); }
    std::string refusal() const { return view.refusal; }
    std::tuple<const hh_tensor*> args() { return {view.present ? &view.view : nullptr}; }
    void put_reply(Writer&) const {}
  };
  using Answer = NoAnswer<const hh_tensor*>;
};

// u8 present, u32 struct_size: the plugin's struct_size decides what the host writes, as for a
// plugin's own. The reply has the code and the message.
template <>
struct Codec<arg::Error> {
  static void put(Writer& w, const hh_error* error) {
    w.put<uint8_t>(error ? 1 : 0);
    w.put<uint32_t>(error ? error->struct_size : 0);
  }
  struct Decoded {
    bool present = false;
    hh_error error{};
    bool read(Reader& in) {
      present = in.get<uint8_t>() != 0;
      const auto struct_size = in.get<uint32_t>();
      hh_error_init(&error);
      error.struct_size = std::min<uint32_t>(struct_size, HH_ERROR_SIZE);
      return true;
    }
    std::string refusal() const { return {}; }
    std::tuple<hh_error*> args() { return {present ? &error : nullptr}; }
    void put_reply(Writer& reply) const {
      reply.put<int32_t>(error.code);
      reply.put_text(
          std::string_view(error.message, ::strnlen(error.message, HH_ERROR_MESSAGE_SIZE)));
    }
  };
  // The host wrote into its copy only what it would have written into the plugin's buffer.
  struct Answer {
    int32_t code = 0;
    std::string message;
    bool read(Reader& in, hh_error*) {
      code = in.get<int32_t>();
      message.assign(in.get_bytes());
      return true;
    }
    void apply(hh_error* error) const {
      if (!error || error->struct_size < HH_ERROR_SIZE_1_0) return;
      if (!message.empty()) {
        const std::size_t n = std::min(message.size(), std::size_t{HH_ERROR_MESSAGE_SIZE - 1});
        std::memcpy(error->message, message.data(), n);
        error->message[n] = '\0';
      }
      if (code != 0) error->code = code;
    }
  };
};

// ---- a row's arguments, codec by codec -------------------------------------------------------

template <class List>
struct ListSize;
template <class... C>
struct ListSize<TypeList<C...>> {
  static constexpr std::size_t value = sizeof...(C);
};

// Where each codec's C parameters start in the row's parameter list.
template <class Codecs>
struct CodecLayout;
template <class... Codecs>
struct CodecLayout<TypeList<Codecs...>> {
  static constexpr std::array<std::size_t, sizeof...(Codecs) + 1> starts = [] {
    std::array<std::size_t, sizeof...(Codecs) + 1> out{};
    const std::size_t sizes[] = {ListSize<typename Codecs::c>::value..., 0};
    for (std::size_t i = 0; i < sizeof...(Codecs); ++i) out[i + 1] = out[i] + sizes[i];
    return out;
  }();
};

// Calls `fn(args...)` with the C arguments of codec I out of the row's whole argument tuple.
template <class Layout, std::size_t I, class Tuple, class Fn>
decltype(auto) with_codec_args(Tuple& all, Fn&& fn) {
  constexpr std::size_t start = Layout::starts[I];
  constexpr std::size_t size = Layout::starts[I + 1] - start;
  return [&]<std::size_t... J>(std::index_sequence<J...>)->decltype(auto) {
    return fn(std::get<start + J>(all)...);
  }
  (std::make_index_sequence<size>());
}

}  // namespace hookhost::sandbox
