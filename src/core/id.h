#pragma once
// Strong index types: `Id<Tag>` is a 32-bit index into one kind of table (the graph's nodes,
// its edges, the op table ...). Ids of different tags do not convert into each other, nor to
// or from integers, so a node index cannot be passed where an edge index is expected. Each
// type has one "none" value (all bits set), which is also what a default-constructed id is.
//
// `IdVector<Index, T>` is a std::vector indexed by one id type, and `IdRange<Index>` the ids
// 0 .. n-1 in order; both compile to the plain vector and loop (the id is a uint32 in a
// register), so hot loops keep their speed and say what they index.
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace dpro {

template <class Tag>
struct Id {
  static constexpr std::uint32_t kNoneValue = 0xffffffffu;

  std::uint32_t value = kNoneValue;

  constexpr Id() noexcept = default;
  constexpr explicit Id(std::uint32_t index) noexcept : value(index) {}
  // The id of element `index` of a container (checked by the caller to fit 32 bits).
  static constexpr Id at(std::size_t index) { return Id(static_cast<std::uint32_t>(index)); }
  static constexpr Id none() { return Id(); }

  constexpr bool valid() const { return value != kNoneValue; }
  // Whether this id indexes one of the first `size` elements (false for none).
  constexpr bool below(std::size_t size) const { return value < size; }

  friend constexpr bool operator==(Id a, Id b) = default;
  friend constexpr auto operator<=>(Id a, Id b) = default;
};

// The decimal index, for messages ("node 12"); none prints as its integer value.
template <class Tag>
std::string to_string(Id<Tag> id) {
  return std::to_string(id.value);
}

// The ids 0 .. size-1, in order.
template <class Index>
class IdRange {
 public:
  class iterator {
   public:
    using value_type = Index;
    using difference_type = std::ptrdiff_t;
    constexpr iterator() = default;
    constexpr explicit iterator(std::uint32_t at) : at_(at) {}
    constexpr Index operator*() const { return Index(at_); }
    constexpr iterator& operator++() { ++at_; return *this; }
    constexpr iterator operator++(int) { iterator old = *this; ++at_; return old; }
    friend constexpr bool operator==(iterator a, iterator b) = default;

   private:
    std::uint32_t at_ = 0;
  };

  constexpr explicit IdRange(std::size_t size) : size_(static_cast<std::uint32_t>(size)) {}
  constexpr iterator begin() const { return iterator(0); }
  constexpr iterator end() const { return iterator(size_); }
  constexpr std::size_t size() const { return size_; }

 private:
  std::uint32_t size_;
};

// A std::vector whose elements are indexed by `Index` only. raw() is the vector itself, for
// what is not about single elements (sorting, passing to code that takes a vector).
template <class Index, class T>
class IdVector {
 public:
  using value_type = T;
  using reference = typename std::vector<T>::reference;
  using const_reference = typename std::vector<T>::const_reference;

  IdVector() = default;
  explicit IdVector(std::size_t size, const T& value = T()) : items_(size, value) {}

  reference operator[](Index id) { return items_[id.value]; }
  const_reference operator[](Index id) const { return items_[id.value]; }
  // Whether `id` indexes an element (false for none).
  bool contains(Index id) const { return id.below(items_.size()); }

  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  IdRange<Index> ids() const { return IdRange<Index>(items_.size()); }
  // The id the next push_back gets.
  Index next_id() const { return Index::at(items_.size()); }

  void assign(std::size_t size, const T& value) { items_.assign(size, value); }
  void resize(std::size_t size) { items_.resize(size); }
  void resize(std::size_t size, const T& value) { items_.resize(size, value); }
  void reserve(std::size_t size) { items_.reserve(size); }
  void clear() { items_.clear(); }
  void push_back(const T& value) { items_.push_back(value); }
  void push_back(T&& value) { items_.push_back(std::move(value)); }
  template <class... Args> reference emplace_back(Args&&... args) { return items_.emplace_back(std::forward<Args>(args)...); }

  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }
  reference front() { return items_.front(); }
  const_reference front() const { return items_.front(); }
  reference back() { return items_.back(); }
  const_reference back() const { return items_.back(); }

  std::vector<T>& raw() { return items_; }
  const std::vector<T>& raw() const { return items_; }

  friend bool operator==(const IdVector&, const IdVector&) = default;

 private:
  std::vector<T> items_;
};

}  // namespace dpro

// The same hash as the integer's: unordered containers keyed by ids iterate in the order they
// did when the keys were integers (outputs that follow such an order stay as they were).
template <class Tag>
struct std::hash<dpro::Id<Tag>> {
  std::size_t operator()(dpro::Id<Tag> id) const noexcept { return std::hash<std::uint32_t>{}(id.value); }
};
