// Incremental byte-pair encoding with worst-case O(log^2 t) work per byte (t = longest token).
//
// A C++17 reconstruction of the algorithm in "Incremental BPE" (Jiang & Gong, ICML 2026; the
// digest in shared/papers/inference-methods.md (a)), written from its description:
//   * a normalised dictionary: only canonical tokens (BPE of the token's own bytes is the
//     token) with the one rule that actually builds each of them, in a proper order;
//   * an Aho-Corasick automaton over the canonical tokens with a full transition table (16
//     tiles of 16 entries per state, shared copy-on-write with the suffix-link state), so each
//     byte costs two array reads;
//   * the successor forest (parent(x) = suc(x)), a pre-order numbering and per-token validity
//     ranges: x = pre.suc can be the last token of a prefix only if the last token of the
//     prefix ending where `pre` ends lies in [id(pre), first child of pre built by a rule of
//     higher priority than x's);
//   * for every canonical token T, the tree of its canonical suffixes, centroid-decomposed, so
//     the last token of BPE(s[0..i]) is found with O(log t) levels of O(log t) binary search;
//   * per position only the last token and its length are stored; the tokenization of any
//     prefix is the chain i -> i - len(last(i)) -> ...;
//   * eager output: a token is emitted once every future tokenization passes through its end.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace incbpe {

using u8 = uint8_t;
using u16 = uint16_t;
using u32 = uint32_t;
using u64 = uint64_t;

constexpr u32 NONE = 0xFFFFFFFFu;
// The token id reported for a byte that no token of the vocabulary contains.
constexpr u32 UNKNOWN = 0xFFFFFFFFu;
constexpr size_t MAX_TOKEN_BYTES = 65535;  // lengths are stored as u16

// Allocator for the large lookup tables: blocks of a megabyte or more are 2 MB-aligned and
// marked for transparent huge pages, so the automaton and the candidate trees (tens of MB for a
// 200k vocabulary) cost a few TLB entries instead of thousands; under virtualisation a TLB miss
// costs about a microsecond, which would dominate the per-byte latency.
void* huge_alloc(size_t bytes);
void huge_free(void* p, size_t bytes) noexcept;

template <class T>
struct HugeAllocator {
    using value_type = T;
    HugeAllocator() = default;
    template <class U>
    HugeAllocator(const HugeAllocator<U>&) {}
    T* allocate(size_t n) { return static_cast<T*>(huge_alloc(n * sizeof(T))); }
    void deallocate(T* p, size_t n) noexcept { huge_free(p, n * sizeof(T)); }
    template <class U>
    bool operator==(const HugeAllocator<U>&) const { return true; }
    template <class U>
    bool operator!=(const HugeAllocator<U>&) const { return false; }
};
template <class T>
using HugeVector = std::vector<T, HugeAllocator<T>>;

struct Rule {
    u32 left, right, result;  // token ids; the priority is the rule's index
};

struct CanonicalRule {
    u32 token, pre, suc, priority;  // priority = index of the rule in the input merge list
};

// Standard BPE over token ids with a merge list (lowest priority first, leftmost on ties).
class MergeTable {
   public:
    MergeTable(const std::vector<std::string>& tokens, const std::vector<Rule>& rules);
    // BPE of `bytes` (atoms = single-byte tokens; bytes without one are dropped and reported
    // in `unknown`). O(n log n) with a heap; the reference for tests and benchmarks.
    std::vector<u32> encode(const std::string& bytes, size_t* unknown = nullptr) const;
    // Canonical tokens (BPE of their own bytes gives themselves) and their producing rules.
    std::vector<CanonicalRule> canonical_rules() const;
    const std::vector<std::string>& tokens() const { return tokens_; }
    u32 atom(u8 byte) const { return atom_[byte]; }

   private:
    bool lookup(u32 left, u32 right, u32* priority, u32* result) const;
    std::vector<std::string> tokens_;
    std::vector<Rule> rules_;
    std::unordered_map<u64, u32> pair_rule_;  // (left, right) -> rule index (the last listed)
    u32 atom_[256];
};

// Thrown for an improper merge order (a token built before one of its parts).
struct ImproperDictionary : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class Vocabulary;

// Eager BPE of one growing byte string with bounded memory: the per-byte step and the eager
// emitter of `Stream`, on a ring buffer that holds only the positions a step or the emitter can
// still read (from min(oldest undecided position, n - t) to n), so it stays in cache whatever
// the length. No prefix tokenizations; the streaming pipeline feeds it the open piece's bytes.
class EagerEncoder {
   public:
    explicit EagerEncoder(const Vocabulary& vocab);
    void reset();
    void feed(const u8* data, size_t size);
    // End of the byte string: every remaining token becomes certain.
    void finish();
    // Append the certain tokens not yet taken to `out` (UNKNOWN: a byte outside the vocabulary).
    void take(std::vector<u32>& out);
    size_t size() const { return n_; }
    size_t pending_bytes() const { return n_ - root_; }

   private:
    struct Slot {
        u32 tok, fid, alive, child_sum;  // child_sum: sum of (child - position) of live children
        u16 len;
    };
    Slot& at(size_t p) { return ring_[p & mask_]; }
    // A block's three passes: the automaton (longest token and depth after each byte, serially
    // or as overlapped walks), the BPE step (each prefix's last token into the ring, as
    // Vocabulary::encode_piece), then the eager emitter's bookkeeping over the block.
    void automaton(const u8* data, size_t size);
    void walk(const u8* data, size_t size);
    void last_tokens(size_t size);
    void settle(size_t size);
    void grow();
    void advance_frontier(size_t new_lo);
    const Vocabulary* vocab_;
    std::vector<Slot> ring_;
    size_t mask_ = 0;
    size_t n_ = 0;
    u32 state_ = 0;
    size_t segment_start_ = 0;
    size_t frontier_lo_ = 0;
    size_t root_ = 0;
    std::vector<u32> emitted_;
    // per byte of the block: the longest token ending there and the automaton's state
    std::vector<u32> longest_buf_, state_buf_;
    size_t serial_blocks_ = 0;
    static constexpr size_t WALKED_FROM = 128;  // shorter blocks walk serially
};

// Incremental BPE state over one byte stream: O(log^2 t) per byte, any prefix recoverable.
class Stream {
   public:
    explicit Stream(const Vocabulary& vocab, bool eager = true);
    void reset();
    void feed(const u8* data, size_t size);
    // Tokens of BPE(stream[0..prefix)) (UNKNOWN for bytes outside the vocabulary).
    std::vector<u32> tokens_of_prefix(size_t prefix) const;
    // Token ids whose boundaries are certain, not yet taken (moved out).
    std::vector<u32> take_emitted();
    // End of stream: every remaining token becomes certain and is emitted.
    void finish();
    size_t size() const { return last_tok_.size() - 1; }
    size_t pending_bytes() const { return size() - root_; }
    size_t max_pending_bytes() const { return max_pending_; }
    bool finished() const { return finished_; }
    // Feed one byte at a time and return each byte's latency in nanoseconds.
    std::vector<u32> feed_timed(const u8* data, size_t size);

   private:
    void step(u8 byte);
    void grow(size_t want);
    void kill(size_t pos);
    void advance_frontier(size_t new_lo);
    const Vocabulary* vocab_;
    bool eager_;
    bool finished_ = false;
    u32 state_ = 0;
    size_t segment_start_ = 0;
    HugeVector<u32> last_tok_;  // per prefix length: the last token's id
    HugeVector<u16> last_len_;  // ... and its length in bytes
    HugeVector<u32> last_fid_;  // ... and its forest pre-order id (NONE: no token)
    // eager emitter: alive-children count and sum of alive children per position
    HugeVector<u32> alive_;
    HugeVector<u64> child_sum_;
    size_t frontier_lo_ = 0;
    size_t root_ = 0;
    size_t max_pending_ = 0;
    std::vector<u32> emitted_;
};

class Vocabulary {
   public:
    // `rules` in priority order; only canonical tokens and their producing rules are kept.
    // Throws ImproperDictionary when a kept rule builds a token before one of its parts.
    Vocabulary(const std::vector<std::string>& tokens, const std::vector<Rule>& rules);

    // BPE of `bytes` as one piece (no pre-tokenization).
    void encode_piece(const u8* data, size_t size, std::vector<u32>& out,
                      std::vector<u32>& scratch_tok, std::vector<u16>& scratch_len,
                      std::vector<u32>& scratch_fid) const;

    size_t n_ids() const { return tokens_.size(); }
    size_t n_canonical() const { return node_id_.size(); }
    size_t n_states() const { return states_.size(); }
    size_t n_tiles() const { return tiles_.size(); }
    size_t n_candidate_nodes() const { return cnodes_.size(); }
    size_t max_token_bytes() const { return max_len_; }
    size_t memory_bytes() const;
    bool canonical(u32 id) const { return id < node_of_id_.size() && node_of_id_[id] != NONE; }
    // whether some token holds this byte (a single-byte token exists)
    bool known_byte(u8 byte) const { return longest_[delta(0, byte)] != NONE; }
    const std::string& token_bytes(u32 id) const { return tokens_[id]; }
    // Search-step counters of the last `step` (for the O(log^2 t) bound test).
    mutable u64 centroid_steps = 0;

   private:
    friend class Stream;
    friend class EagerEncoder;
    // hot-path records: what one step reads about a node, a state or a centroid sits together
    struct NodeInfo {
        u32 lo, hi, fid, id, cd_root;
        u16 len, suc_len;  // suc_len 0: a single byte
    };
    struct alignas(64) State {  // one cache line per automaton state
        std::array<u32, 16> tiles;
    };
    struct CNode {
        u32 lo, hi;  // the centroid's validity range
        u32 node, parent_side;
        u32 child_lo, child_hi, child_target;  // its only child component, kept inline
        u32 child_begin;                       // else: its children in cchildren_
        u16 child_count, suc_len, len;
    };
    u32 delta(u32 state, u8 byte) const {
        return tiles_[states_[state].tiles[byte >> 4]][byte & 15];
    }
    // the last token (node) of BPE(prefix of length p), given the longest token x ending there
    template <class FidAt>
    u32 last_token(u32 x, size_t p, const FidAt& fid_at) const;

    // longest[i + 1] = the longest canonical token ending at byte i (NONE: unknown byte)
    void longest_tokens(const u8* data, size_t size, u32* longest) const;
    // pieces at least this long run the automaton first, as overlapped walks
    static constexpr size_t WALKS_FROM = 16384;

    void build_forest();
    void build_automaton();
    void relabel_states(const std::vector<u32>& parent, const std::vector<u32>& order);
    void build_candidate_trees();

    std::vector<std::string> tokens_;
    u32 max_len_ = 0;
    // canonical tokens ("nodes")
    std::vector<u32> node_of_id_;
    std::vector<u32> node_id_;
    std::vector<u16> node_len_;
    std::vector<u16> suc_len_;
    std::vector<u32> pre_, suc_, priority_;  // NONE for atoms
    std::vector<u32> fid_, range_lo_, range_hi_;
    std::vector<u32> node_state_;      // node -> its automaton state
    std::vector<u32> shorter_suffix_;  // node -> longest canonical proper suffix (or NONE)
    // Aho-Corasick automaton
    HugeVector<State> states_;
    HugeVector<u32> longest_;  // state -> longest canonical token that is a suffix (or NONE)
    HugeVector<u16> depth_;    // state -> length of its string
    HugeVector<std::array<u32, 16>> tiles_;
    HugeVector<NodeInfo> info_;
    // centroid-decomposed candidate trees
    struct CChild {
        u32 lo, hi, target;
    };
    std::vector<u32> cd_root_;  // node -> index into cnodes_
    HugeVector<CNode> cnodes_;
    HugeVector<CChild> cchildren_;
};

}  // namespace incbpe
