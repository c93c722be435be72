// Scanners equivalent to the GPT-2, cl100k_base and o200k_base split patterns, and the
// split-then-BPE pipeline. Each scanner mirrors its pattern's alternatives in order,
// including the backtracking of the greedy quantifiers, so pieces are identical.
#include "pretok.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>

namespace incbpe {

#include "unicode_classes.inc"

namespace {

struct ClassTable {
    std::vector<u16> block;  // cp >> 8 -> block index
    std::vector<u16> value;  // block * 256 + (cp & 255) -> class bits
    ClassTable() {
        std::vector<u16> bits(0x110000, 0);
        for (const auto& r : UNICODE_RANGES)
            for (u32 c = r[0]; c <= r[1]; ++c) bits[c] = u16(r[2]);
        std::map<std::vector<u16>, u16> seen;
        block.resize(0x1100);
        for (u32 b = 0; b < 0x1100; ++b) {
            std::vector<u16> row(bits.begin() + b * 256, bits.begin() + (b + 1) * 256);
            auto it = seen.find(row);
            if (it == seen.end()) {
                u16 index = u16(seen.size());
                it = seen.emplace(row, index).first;
                value.insert(value.end(), row.begin(), row.end());
            }
            block[b] = it->second;
        }
    }
};

const ClassTable& table() {
    static const ClassTable t;
    return t;
}

}  // namespace

u16 unicode_class(u32 cp) {
    if (cp >= 0x110000) return 0;
    const ClassTable& t = table();
    return t.value[size_t(t.block[cp >> 8]) * 256 + (cp & 255)];
}

namespace {

// One unit of UTF-8 at s[i] (i < size): a code point, or 0x110000 + the byte for a byte that
// starts no valid sequence (class "other"; Python strings are always valid, this only keeps bad
// input from crashing). Returns its length; 0 when `wait` and a sequence that could still be
// valid is cut off by the end.
inline size_t decode_unit(const u8* s, size_t i, size_t size, bool wait, u32& out) {
    u32 c = s[i];
    if (c < 0x80) {
        out = c;
        return 1;
    }
    size_t need = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
    if (wait && need > 0 && c < 0xF5 && i + need >= size) {
        bool continuing = true;
        for (size_t k = i + 1; k < size; ++k) continuing &= (s[k] & 0xC0) == 0x80;
        if (continuing) return 0;
    }
    u32 value = need == 3 ? c & 7 : need == 2 ? c & 15 : c & 31;
    bool ok = need > 0 && c < 0xF5 && i + need < size;
    for (size_t k = 1; ok && k <= need; ++k) {
        u8 b = s[i + k];
        if ((b & 0xC0) != 0x80) ok = false;
        value = (value << 6) | (b & 63);
    }
    if (ok) {
        static const u32 min_value[4] = {0, 0x80, 0x800, 0x10000};
        if (value < min_value[need] || value > 0x10FFFF || (value >= 0xD800 && value < 0xE000))
            ok = false;
    }
    if (ok) {
        out = value;
        return need + 1;
    }
    out = 0x110000 + s[i];
    return 1;
}

}  // namespace

void Decoded::decode(const u8* s, size_t size) {
    cp.clear();
    cls.clear();
    offset.clear();
    cp.reserve(size);
    cls.reserve(size);
    offset.reserve(size + 1);
    offset.push_back(0);
    append(s, size, true);
}

size_t Decoded::append(const u8* s, size_t size, bool eof) {
    const ClassTable& t = table();
    size_t i = 0;
    if (offset.empty())
        offset.push_back(0);
    i = offset.back();
    offset.pop_back();
    size_t before = cp.size(), k = before;
    // at most one unit per byte: write in place, then cut to size
    cp.resize(before + (size - i));
    cls.resize(before + (size - i));
    offset.resize(before + (size - i) + 1);
    while (i < size) {
        u32 c;
        size_t len = decode_unit(s, i, size, !eof, c);
        if (len == 0) break;
        offset[k] = u32(i);
        cp[k] = c;
        cls[k] = c < 0x110000 ? t.value[size_t(t.block[c >> 8]) * 256 + (c & 255)] : 0;
        ++k;
        i += len;
    }
    offset[k] = u32(i);
    cp.resize(k);
    cls.resize(k);
    offset.resize(k + 1);
    return k - before;
}

void RunMemo::store(size_t start, u32 kind, size_t reached) {
    for (Entry& e : entries)
        if (e.start == start && e.kind == kind) {
            e.reached = reached;
            return;
        }
    entries.push_back({start, reached, kind});
}

void RunMemo::forget_before(size_t from, size_t by) {
    size_t w = 0;
    for (const Entry& e : entries)
        if (e.start >= from) entries[w++] = {e.start - by, e.reached - by, e.kind};
    entries.resize(w);
}

namespace {

constexpr u16 LOWER_LIKE = C_LL | C_LM | C_LO | C_M;  // o200k's lower-case letter set
constexpr u32 RUN_OTHER = 0x10000, RUN_NEWLINES = 0x20000, RUN_NEWLINES_SLASH = 0x30000;

struct Scanner {
    const Decoded& t;
    size_t n;
    bool touched = false;  // read past the end of the text
    // streaming only: resumed runs, the newline / lower-case tracks, and the open piece's
    // certain lower bound when that is not the end found so far (a whitespace run at the end)
    RunMemo* memo = nullptr;
    const u32* prev_newline = nullptr;
    const u32* prev_lower = nullptr;
    size_t floor = SIZE_MAX;

    u16 cls(size_t k) {
        if (k >= n) {
            touched = true;
            return C_END;
        }
        return t.cls[k];
    }
    u32 cp(size_t k) {
        if (k >= n) {
            touched = true;
            return 0xFFFFFFFFu;
        }
        return t.cp[k];
    }
    bool letter(size_t k) { return cls(k) & C_L; }
    bool number(size_t k) { return cls(k) & C_N; }
    bool space(size_t k) { return cls(k) & C_S; }
    // [^\s\p{L}\p{N}]
    bool other(size_t k) { return !(cls(k) & (C_L | C_N | C_S | C_END)); }
    bool newline(size_t k) {
        u32 c = cp(k);
        return c == '\r' || c == '\n';
    }
    // the run of positions from k where `inside` holds; with a memo, a run that reached the end
    // of a shorter text resumes where it stopped (its positions are unchanged)
    template <class Inside>
    size_t resumable(size_t k, u32 kind, Inside inside) {
        size_t start = k;
        if (memo)
            if (const RunMemo::Entry* e = memo->find(start, kind)) k = e->reached;
        while (inside(k)) ++k;
        if (memo && k >= n) memo->store(start, kind, n);
        return k;
    }
    size_t run(size_t k, u16 mask) {
        return resumable(k, mask, [this, mask](size_t j) { return (cls(j) & mask) != 0; });
    }
    size_t run_other(size_t k) {
        return resumable(k, RUN_OTHER, [this](size_t j) { return other(j); });
    }
    size_t run_newlines(size_t k, bool slash = false) {
        return resumable(k, slash ? RUN_NEWLINES_SLASH : RUN_NEWLINES, [this, slash](size_t j) {
            u32 c = cp(j);
            return c == '\r' || c == '\n' || (slash && c == '/');
        });
    }
    // the last position in [from, end) (end <= n) holding \r or \n, or SIZE_MAX
    size_t last_newline(size_t from, size_t end) const {
        if (prev_newline) {
            u32 k = prev_newline[end];
            return k != NONE && k >= from ? k : SIZE_MAX;
        }
        for (size_t k = end; k-- > from;)
            if (t.cp[k] == '\r' || t.cp[k] == '\n') return k;
        return SIZE_MAX;
    }
    // the last position in [from, end) (end <= n) of class LOWER_LIKE, or SIZE_MAX
    size_t last_lower(size_t from, size_t end) const {
        if (prev_lower) {
            u32 k = prev_lower[end];
            return k != NONE && k >= from ? k : SIZE_MAX;
        }
        for (size_t k = end; k-- > from;)
            if (t.cls[k] & LOWER_LIKE) return k;
        return SIZE_MAX;
    }
    // certain part of a whitespace run [i, n) that reached the end, when no newline decides it:
    // before a non-space the run gives back its last character (if it has two or more)
    void space_floor(size_t i) { floor = n - i >= 2 ? n - 1 : n; }
    static u32 fold(u32 c) {
        if (c >= 'A' && c <= 'Z') return c + 32;
        if (c == 0x17F) return 's';  // LATIN SMALL LETTER LONG S folds to s
        if (c == 0x212A) return 'k';  // KELVIN SIGN
        return c;
    }
    // 's 't 're 've 'm 'll 'd at k (case-insensitive or not); returns the end or 0
    size_t contraction(size_t k, bool ignore_case) {
        if (cp(k) != '\'') return 0;
        u32 a = cp(k + 1);
        if (ignore_case) a = fold(a);
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return k + 2;
        if (a == 'r' || a == 'v' || a == 'l') {
            u32 b = cp(k + 2);
            if (ignore_case) b = fold(b);
            if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
                return k + 3;
        }
        return 0;
    }
    // \s+(?!\S)|\s+ for a whitespace run starting at i that ends at q
    size_t trailing_space(size_t i, size_t q) {
        if (q >= n) {  // (?!\S) holds at the end of the text
            space_floor(i);
            return n;
        }
        return q - i >= 2 ? q - 1 : q;
    }

    // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
    size_t gpt2(size_t i) {
        if (size_t e = contraction(i, false)) return e;
        bool sp = cp(i) == ' ';
        if (sp && letter(i + 1)) return run(i + 2, C_L);
        if (letter(i)) return run(i + 1, C_L);
        if (sp && number(i + 1)) return run(i + 2, C_N);
        if (number(i)) return run(i + 1, C_N);
        if (sp && other(i + 1)) return run_other(i + 2);
        if (other(i)) return run_other(i + 1);
        return trailing_space(i, run(i + 1, C_S));
    }

    // '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|
    //  ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s
    size_t cl100k(size_t i) {
        if (size_t e = contraction(i, true)) return e;
        if (letter(i)) return run(i + 1, C_L);
        if (!newline(i) && !number(i) && !(cls(i) & C_END) && letter(i + 1))
            return run(i + 2, C_L);
        if (number(i)) {
            size_t k = i + 1;
            while (k < i + 3 && number(k)) ++k;
            return k;
        }
        if (cp(i) == ' ' && other(i + 1)) return run_newlines(run_other(i + 2));
        if (other(i)) return run_newlines(run_other(i + 1));
        size_t q = run(i + 1, C_S);
        if (q >= n) {  // \s++$; before a non-space: up to the last newline, or give one back
            size_t k = last_newline(i, n);
            if (k != SIZE_MAX)
                floor = k + 1;
            else
                space_floor(i);
            return n;
        }
        size_t k = last_newline(i, q);
        if (k != SIZE_MAX) return k + 1;  // \s*[\r\n]
        return trailing_space(i, q);
    }

    // [^\r\n\p{L}\p{N}]?[UPPER]*[LOWER]+(?i:'s|...)?|[^\r\n\p{L}\p{N}]?[UPPER]+[LOWER]*(?i:..)?
    // |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
    static constexpr u16 UPPER = C_LU | C_LT | C_LM | C_LO | C_M;
    static constexpr u16 LOWER = LOWER_LIKE;
    size_t with_contraction(size_t e) {
        size_t c = contraction(e, true);
        return c ? c : e;
    }
    // UPPER* LOWER+ from j (greedy UPPER* backs off until LOWER+ can match); 0 on failure
    size_t upper_then_lower(size_t j) {
        size_t u_end = run(j, UPPER);
        size_t k = (cls(u_end) & LOWER) ? u_end : last_lower(j, u_end);
        if (k == SIZE_MAX) return 0;
        return with_contraction(run(k + 1, LOWER));
    }
    size_t upper_plus_lower(size_t j) {
        if (!(cls(j) & UPPER)) return 0;
        return with_contraction(run(run(j + 1, UPPER), LOWER));
    }
    bool prefix_char(size_t i) {
        u16 c = cls(i);
        return !(c & (C_L | C_N | C_END)) && !newline(i);
    }
    size_t o200k(size_t i) {
        bool prefix = prefix_char(i);
        if (prefix)
            if (size_t e = upper_then_lower(i + 1)) return e;
        if (size_t e = upper_then_lower(i)) return e;
        if (prefix)
            if (size_t e = upper_plus_lower(i + 1)) return e;
        if (size_t e = upper_plus_lower(i)) return e;
        if (number(i)) {
            size_t k = i + 1;
            while (k < i + 3 && number(k)) ++k;
            return k;
        }
        if (cp(i) == ' ' && other(i + 1)) return run_newlines(run_other(i + 2), true);
        if (other(i)) return run_newlines(run_other(i + 1), true);
        size_t q = run(i + 1, C_S);
        size_t k = last_newline(i, std::min(q, n));
        if (k != SIZE_MAX) return k + 1;  // \s*[\r\n]+
        return trailing_space(i, q);
    }
};

}  // namespace

size_t split_pieces(Split kind, const Decoded& text, bool eof, std::vector<u32>& ends) {
    return scan_pieces(kind, text, 0, eof, ends, nullptr, nullptr, nullptr, nullptr);
}

void extend_tracks(const Decoded& text, std::vector<u32>& prev_newline,
                   std::vector<u32>& prev_lower) {
    if (prev_newline.empty()) prev_newline.push_back(NONE);
    if (prev_lower.empty()) prev_lower.push_back(NONE);
    for (size_t k = prev_newline.size() - 1; k < text.cp.size(); ++k) {
        u32 c = text.cp[k];
        prev_newline.push_back(c == '\r' || c == '\n' ? u32(k) : prev_newline[k]);
        prev_lower.push_back(text.cls[k] & LOWER_LIKE ? u32(k) : prev_lower[k]);
    }
}

size_t scan_pieces(Split kind, const Decoded& text, size_t from, bool eof, std::vector<u32>& ends,
                   size_t* floor, RunMemo* memo, const u32* prev_newline, const u32* prev_lower) {
    size_t n = text.cp.size();
    if (floor) *floor = n;
    if (kind == Split::Whole) {
        if (eof && n > from) ends.push_back(u32(n));
        return eof ? n : from;
    }
    Scanner s{text, n};
    s.memo = memo;
    s.prev_newline = prev_newline;
    s.prev_lower = prev_lower;
    size_t i = from;
    while (i < n) {
        s.touched = false;
        s.floor = SIZE_MAX;
        size_t e = kind == Split::Gpt2 ? s.gpt2(i) : kind == Split::Cl100k ? s.cl100k(i) : s.o200k(i);
        if (e <= i || e > n) e = i + 1;  // never stall (cannot happen for valid classes)
        if (s.touched && !eof) {
            // Every alternative is a bounded head, runs that only grow, and bounded tails that
            // only add, except a whitespace run at the end (it may give characters back): the
            // end found so far is certain, or the whitespace bound (tested against every
            // continuation up to four characters and random longer ones).
            if (floor) *floor = std::min(std::max(s.floor == SIZE_MAX ? e : s.floor, i), n);
            return i;
        }
        ends.push_back(u32(e));
        i = e;
    }
    return i;
}

// ---------------------------------------------------------------- pipeline

Pipeline::Pipeline(const Vocabulary& vocab, PipelineOptions options)
    : vocab_(&vocab), options_(options) {
    if (options_.whole_piece_lookup)
        for (u32 id = 0; id < vocab.n_ids(); ++id) {
            const std::string& t = vocab.token_bytes(id);
            if (t.empty() || vocab.canonical(id)) continue;
            whole_.emplace(t, id);  // the first id of a repeated byte string wins
            whole_max_ = std::max(whole_max_, t.size());
        }
}

void Pipeline::encode_one(const u8* data, size_t size, std::vector<u32>& out,
                          std::vector<u32>& tok, std::vector<u16>& len,
                          std::vector<u32>& fid) const {
    if (options_.unknown_id == NONE) {
        // HF without an unknown token drops such bytes before merging, so their neighbours
        // can still merge across them
        size_t k = 0;
        while (k < size && vocab_->known_byte(data[k])) ++k;
        if (k < size) {
            std::string kept(reinterpret_cast<const char*>(data), k);
            for (; k < size; ++k)
                if (vocab_->known_byte(data[k])) kept.push_back(char(data[k]));
            size_t first = out.size();
            vocab_->encode_piece(reinterpret_cast<const u8*>(kept.data()), kept.size(), out, tok,
                                 len, fid);
            if (out.size() - first > 1 && kept.size() <= whole_max_) {
                auto it = whole_.find(kept);
                if (it != whole_.end()) {
                    out.resize(first);
                    out.push_back(it->second);
                }
            }
            return;
        }
    }
    size_t first = out.size();
    vocab_->encode_piece(data, size, out, tok, len, fid);
    if (out.size() - first > 1 && size <= whole_max_) {
        auto it = whole_.find(std::string(reinterpret_cast<const char*>(data), size));
        if (it != whole_.end()) {
            out.resize(first);
            out.push_back(it->second);
            return;
        }
    }
    // bytes outside the vocabulary: the unknown id (consecutive ones fused) or nothing
    bool any = false;
    for (size_t k = first; k < out.size(); ++k) any |= out[k] == UNKNOWN;
    if (!any) return;
    size_t w = first;
    bool previous_unknown = false;
    for (size_t k = first; k < out.size(); ++k) {
        bool unknown = out[k] == UNKNOWN;
        if (!unknown)
            out[w++] = out[k];
        else if (options_.unknown_id != NONE && !(options_.fuse_unknown && previous_unknown))
            out[w++] = options_.unknown_id;
        previous_unknown = unknown;
    }
    out.resize(w);
}

std::vector<u32> Pipeline::encode(const u8* data, size_t size, bool eof, size_t* consumed) const {
    std::vector<u32> out, tok, fid;
    std::vector<u16> len;
    out.reserve(size / 3 + 8);
    if (options_.split == Split::Whole) {
        if (eof) encode_one(data, size, out, tok, len, fid);
        if (consumed) *consumed = eof ? size : 0;
        return out;
    }
    Decoded text;
    text.decode(data, size);
    std::vector<u32> ends;
    ends.reserve(text.cp.size() / 3 + 8);
    size_t covered = split_pieces(options_.split, text, eof, ends);
    size_t start = 0;
    for (u32 e : ends) {
        size_t a = text.offset[start], b = text.offset[e];
        encode_one(data + a, b - a, out, tok, len, fid);
        start = e;
    }
    if (consumed) *consumed = text.offset[covered];
    return out;
}

std::vector<u32> Pipeline::encode_pieces(const u8* data, const u64* ends, size_t n_pieces) const {
    std::vector<u32> out, tok, fid;
    std::vector<u16> len;
    u64 start = 0;
    for (size_t k = 0; k < n_pieces; ++k) {
        if (ends[k] < start) throw std::invalid_argument("piece ends must be ascending");
        encode_one(data + start, size_t(ends[k] - start), out, tok, len, fid);
        start = ends[k];
    }
    return out;
}

// ---------------------------------------------------------------- streamed pipeline

PieceStream::PieceStream(const Pipeline& pipeline)
    : pipe_(&pipeline), eager_(pipeline.vocab()) {
    Split kind = pipeline.options().split;
    tracks_ = kind == Split::Cl100k || kind == Split::O200k;
    for (int b = 0; b < 256; ++b) {
        known_[b] = pipeline.vocab().known_byte(u8(b));
        drop_unknown_ |= !known_[b];
    }
    drop_unknown_ &= pipeline.options().unknown_id == NONE;
    reset();
}

void PieceStream::reset() {
    eager_.reset();
    bytes_.clear();
    text_.cp.clear();
    text_.cls.clear();
    text_.offset.assign(1, 0);
    prev_newline_.clear();
    prev_lower_.clear();
    memo_.entries.clear();
    piece_ = 0;
    open_ = false;
    fed_ = 0;
    fed_cp_ = 0;
    dropped_ = 0;
    held_.clear();
    ready_.clear();
}

void PieceStream::feed(const u8* data, size_t size) {
    if (size == 0) return;
    bytes_.append(reinterpret_cast<const char*>(data), size);
    if (text_.append(reinterpret_cast<const u8*>(bytes_.data()), bytes_.size(), false) == 0) return;
    process(false);
    compact();
    trim();
}

void PieceStream::finish() {
    text_.append(reinterpret_cast<const u8*>(bytes_.data()), bytes_.size(), true);
    process(true);
    std::vector<u32> out;
    out.swap(ready_);
    reset();
    ready_.swap(out);
}

void PieceStream::take(std::vector<u32>& out) {
    out.insert(out.end(), ready_.begin(), ready_.end());
    ready_.clear();
}

size_t PieceStream::pending_bytes() const {
    size_t out_to = text_.offset[piece_];
    // the eager encoder's positions are the piece's bytes (kept bytes only when dropping)
    if (open_ && released_ && !drop_unknown_) out_to += eager_.size() - eager_.pending_bytes();
    return bytes_.size() + dropped_ - out_to;
}

void PieceStream::process(bool eof) {
    if (tracks_) extend_tracks(text_, prev_newline_, prev_lower_);
    ends_.clear();
    size_t floor = 0;
    size_t open = scan_pieces(pipe_->options().split, text_, piece_, eof, ends_, &floor, &memo_,
                              tracks_ ? prev_newline_.data() : nullptr,
                              tracks_ ? prev_lower_.data() : nullptr);
    size_t start = piece_;
    for (u32 e : ends_) {
        close_piece(start, e);
        start = e;
    }
    piece_ = start;
    memo_.forget_before(piece_, 0);
    if (!eof && open < text_.cp.size()) extend_open(open, floor);
}

void PieceStream::feed_eager(const u8* data, size_t size) {
    if (drop_unknown_) {  // HF without an unknown token: such bytes are dropped before merging
        kept_.clear();
        for (size_t k = 0; k < size; ++k)
            if (known_[data[k]]) kept_.push_back(char(data[k]));
        data = reinterpret_cast<const u8*>(kept_.data());
        size = kept_.size();
    }
    eager_.feed(data, size);
    eager_bytes_ += size;
    max_eager_pending_ = std::max(max_eager_pending_, eager_.pending_bytes());
}

void PieceStream::release(const std::vector<u32>& tokens) {
    // as Pipeline::encode_one: bytes outside the vocabulary become the unknown id (consecutive
    // ones fused) or nothing
    const PipelineOptions& o = pipe_->options();
    if (!previous_unknown_ && std::find(tokens.begin(), tokens.end(), UNKNOWN) == tokens.end()) {
        ready_.insert(ready_.end(), tokens.begin(), tokens.end());
        return;
    }
    for (u32 t : tokens) {
        bool unknown = t == UNKNOWN;
        if (!unknown)
            ready_.push_back(t);
        else if (o.unknown_id != NONE && !(o.fuse_unknown && previous_unknown_))
            ready_.push_back(o.unknown_id);
        previous_unknown_ = unknown;
    }
}

void PieceStream::close_piece(size_t a, size_t b) {
    const u8* data = reinterpret_cast<const u8*>(bytes_.data());
    size_t from = text_.offset[a], to = text_.offset[b];
    if (open_ && a == piece_) {
        open_ = false;
        dropped_ = 0;
        if (to < fed_)  // the split's certain prefix was wrong: never feed bytes of another piece
            throw std::logic_error("streaming split: a piece ended inside its certain prefix");
        if (released_) {
            feed_eager(data + fed_, to - fed_);
            eager_.finish();
            scratch_.clear();
            eager_.take(scratch_);
            release(scratch_);
            eager_.reset();
            return;
        }
        eager_.reset();  // short enough to be a whole-piece token: encoded whole below
    }
    pipe_->encode_one(data + from, to - from, ready_, tok_, len_, fid_);
}

void PieceStream::extend_open(size_t a, size_t floor) {
    const u8* data = reinterpret_cast<const u8*>(bytes_.data());
    if (!open_ || a != piece_) {
        open_ = true;
        eager_.reset();
        fed_ = text_.offset[a];
        fed_cp_ = a;
        dropped_ = 0;
        eager_bytes_ = 0;
        released_ = pipe_->whole_max_ == 0;
        previous_unknown_ = false;
        held_.clear();
    }
    size_t upto = text_.offset[floor];
    if (upto > fed_) {
        feed_eager(data + fed_, upto - fed_);
        fed_ = upto;
        fed_cp_ = floor;
    }
    scratch_.clear();
    eager_.take(scratch_);
    if (released_) {
        release(scratch_);
        return;
    }
    // a piece no longer than the longest whole-piece token may still be one (tiktoken): its
    // tokens wait until it is longer, or it is encoded whole when it closes
    held_.insert(held_.end(), scratch_.begin(), scratch_.end());
    if (eager_bytes_ > pipe_->whole_max_) {
        released_ = true;
        release(held_);
        held_.clear();
    }
}

void PieceStream::compact() {
    // The middle of a long open piece leaves the window: the eager encoder has its bytes, and
    // under the GPT-2 and cl100k splits the scan of an open piece reads only its first code
    // points (which alternative matched: a contraction, a letter or number run, ' ?' and
    // other characters, whitespace) and, through the run memo, what follows the run's last
    // scanned end; no alternative falls back to rereading the run. cl100k's whitespace run
    // also asks for its last newline, so a gap holds none (its lower-case track is never
    // read). o200k falls back between alternatives over the same run: no gap.
    constexpr size_t HEAD = 8, TAIL = 64, MIN_GAP = 4096;
    Split kind = pipe_->options().split;
    if (!open_ || !released_ || kind == Split::O200k) return;
    size_t n = text_.cp.size();
    size_t g0 = piece_ + HEAD;
    size_t g1 = std::min(fed_cp_, n > TAIL ? n - TAIL : 0);
    if (tracks_ && g1 > g0 && prev_newline_[g1] != NONE)
        g0 = std::max(g0, size_t(prev_newline_[g1]) + 1);
    if (g1 < g0 + MIN_GAP) return;
    size_t gap = g1 - g0;
    // Runs of the head must stop before the gap or reach past it. A run that starts in the
    // gap is a tail run (cl100k's newlines after punctuation) begun at an earlier end of a head
    // run that has since grown past the gap: it is never looked up again, and is dropped.
    bool passed = kind == Split::Whole;  // no split: nothing is scanned
    for (const RunMemo::Entry& e : memo_.entries) {
        if (e.start < g0 && e.reached > g0 && e.reached < g1) return;
        passed |= e.start < g0 && e.reached >= g1;
    }
    if (!passed) return;
    size_t w = 0;
    for (RunMemo::Entry e : memo_.entries) {
        if (e.start >= g0 && e.start < g1) continue;
        if (e.start >= g1) e.start -= gap;
        if (e.reached >= g1) e.reached -= gap;
        memo_.entries[w++] = e;
    }
    memo_.entries.resize(w);
    size_t b0 = text_.offset[g0], gap_bytes = text_.offset[g1] - b0;
    bytes_.erase(b0, gap_bytes);
    text_.cp.erase(text_.cp.begin() + g0, text_.cp.begin() + g1);
    text_.cls.erase(text_.cls.begin() + g0, text_.cls.begin() + g1);
    text_.offset.erase(text_.offset.begin() + g0, text_.offset.begin() + g1);
    for (size_t k = g0; k < text_.offset.size(); ++k) text_.offset[k] -= u32(gap_bytes);
    for (std::vector<u32>* track : {&prev_newline_, &prev_lower_}) {
        if (track->empty()) continue;
        // entry k: the last marked position before k, now of the text without the gap (a
        // newline is never in it; a lower-case letter there becomes the one before it)
        u32 before_gap = (*track)[g0];
        track->erase(track->begin() + g0, track->begin() + g1);
        for (u32& k : *track)
            if (k != NONE && k >= g0) k = k >= g1 ? k - u32(gap) : before_gap;
    }
    fed_ -= gap_bytes;
    fed_cp_ -= gap;
    dropped_ += gap_bytes;
}

void PieceStream::trim() {
    // drop the closed pieces' text once they are at least half the window (amortised O(1))
    size_t d = piece_;
    if (d < 4096 || 2 * d < text_.cp.size()) return;
    size_t db = text_.offset[d];
    bytes_.erase(0, db);
    text_.cp.erase(text_.cp.begin(), text_.cp.begin() + d);
    text_.cls.erase(text_.cls.begin(), text_.cls.begin() + d);
    text_.offset.erase(text_.offset.begin(), text_.offset.begin() + d);
    for (u32& o : text_.offset) o -= u32(db);
    for (std::vector<u32>* track : {&prev_newline_, &prev_lower_}) {
        if (track->empty()) continue;
        track->erase(track->begin(), track->begin() + d);
        for (u32& k : *track) k = k == NONE || k < d ? NONE : k - u32(d);
    }
    memo_.forget_before(d, d);
    piece_ = 0;
    fed_ -= db;
    fed_cp_ -= d;
}

// ---------------------------------------------------------------- the text layer

namespace {

enum class Unit { Valid, Invalid, Cut };

// The UTF-8 sequence at s[i] (s[i] >= 0x80): Valid (len bytes), Invalid (its maximal invalid
// subpart is len bytes: the lead byte and the continuation bytes that were still possible),
// or Cut (a possible sequence that the end of the bytes cuts off after len bytes).
inline Unit utf8_unit(const u8* s, size_t i, size_t size, size_t& len) {
    u8 c = s[i];
    size_t need;
    u8 lo = 0x80, hi = 0xBF;  // the second byte's range (Unicode's table 3-7)
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        len = 1;
        return Unit::Invalid;
    }
    for (size_t k = 1; k <= need; ++k) {
        if (i + k >= size) {
            len = k;
            return Unit::Cut;
        }
        u8 b = s[i + k];
        if (b < lo || b > hi) {
            len = k;
            return Unit::Invalid;
        }
        lo = 0x80;
        hi = 0xBF;
    }
    len = need + 1;
    return Unit::Valid;
}

inline bool ascii8(const u8* s) {
    u64 word;
    std::memcpy(&word, s, 8);
    return (word & 0x8080808080808080ull) == 0;
}

}  // namespace

size_t repair_utf8(const u8* s, size_t size, bool final, std::string& out, bool& changed) {
    changed = false;
    size_t i = 0, clean = 0;
    while (i < size) {
        while (i + 8 <= size && ascii8(s + i)) i += 8;
        if (i >= size) break;
        if (s[i] < 0x80) {
            ++i;
            continue;
        }
        size_t len;
        Unit unit = utf8_unit(s, i, size, len);
        if (unit == Unit::Valid) {
            i += len;
            continue;
        }
        if (unit == Unit::Cut && !final) {
            size = i;  // waits for the next part
            break;
        }
        if (!changed) out.clear();
        changed = true;
        out.append(reinterpret_cast<const char*>(s) + clean, i - clean);
        out += "\xEF\xBF\xBD";
        i += len;
        clean = i;
    }
    if (changed) out.append(reinterpret_cast<const char*>(s) + clean, size - clean);
    return size;
}

TextStream::TextStream(const Pipeline& pipeline, std::vector<Added> added, bool add_prefix_space,
                       bool collect)
    : pieces_(pipeline),
      added_(std::move(added)),
      add_prefix_space_(add_prefix_space),
      collect_(collect) {
    std::stable_sort(added_.begin(), added_.end(), [](const Added& a, const Added& b) {
        return a.content.size() > b.content.size();
    });
    std::fill(first_, first_ + 256, false);
    for (const Added& a : added_) {
        if (a.content.empty()) throw std::invalid_argument("an added token is empty");
        first_[u8(a.content[0])] = true;
        longest_ = std::max(longest_, a.content.size());
        matching_ = true;
    }
}

void TextStream::reset() {
    pieces_.reset();
    cut_.clear();
    held_.clear();
    collected_.clear();
    segments_.clear();
    ready_.clear();
    started_ = false;
}

void TextStream::feed(const u8* data, size_t size) {
    if (size == 0) return;
    if (!cut_.empty()) {  // the cut sequence goes first (at most 3 bytes)
        work_.assign(cut_);
        work_.append(reinterpret_cast<const char*>(data), size);
        cut_.clear();
        std::string joined;
        joined.swap(work_);
        feed(reinterpret_cast<const u8*>(joined.data()), joined.size());
        work_.swap(joined);
        return;
    }
    bool changed;
    size_t end = repair_utf8(data, size, false, repaired_, changed);
    cut_.assign(reinterpret_cast<const char*>(data) + end, size - end);
    if (changed)
        text(reinterpret_cast<const u8*>(repaired_.data()), repaired_.size(), false);
    else
        text(data, end, false);
}

std::string TextStream::take_cut() {
    std::string out;
    out.swap(cut_);
    return out;
}

void TextStream::finish() {
    if (!cut_.empty()) {
        bool changed;
        std::string cut;
        cut.swap(cut_);
        repair_utf8(reinterpret_cast<const u8*>(cut.data()), cut.size(), true, repaired_, changed);
        const std::string& valid = changed ? repaired_ : cut;
        text(reinterpret_cast<const u8*>(valid.data()), valid.size(), false);
    }
    text(nullptr, 0, true);
    end_segment();
    std::vector<u32> out;
    out.swap(ready_);
    std::vector<std::string> segments;
    segments.swap(segments_);
    reset();
    ready_.swap(out);
    segments_.swap(segments);
}

void TextStream::take(std::vector<u32>& out) {
    out.insert(out.end(), ready_.begin(), ready_.end());
    ready_.clear();
}

std::vector<std::string> TextStream::take_segments() {
    std::vector<std::string> out;
    out.swap(segments_);
    return out;
}

size_t TextStream::pending_bytes() const {
    return cut_.size() + held_.size() + collected_.size() + pieces_.pending_bytes();
}

void TextStream::text(const u8* data, size_t size, bool final) {
    if (!matching_) {
        segment(data, size);
        return;
    }
    if (!held_.empty()) {  // held text first (shorter than the longest added token)
        work_.assign(held_);
        if (size) work_.append(reinterpret_cast<const char*>(data), size);
        held_.clear();
        data = reinterpret_cast<const u8*>(work_.data());
        size = work_.size();
    }
    size_t at = 0, i = 0;
    while (true) {
        while (i < size && !first_[data[i]]) ++i;
        if (i >= size) {
            segment(data + at, size - at);
            return;
        }
        // an added token at i: the longest that matches, unless the rest of the text is a
        // proper prefix of one (then it may still start here: hold from i)
        size_t rest = size - i;
        const Added* match = nullptr;
        bool open = false;
        for (const Added& a : added_) {
            if (u8(a.content[0]) != data[i]) continue;
            if (a.content.size() <= rest) {
                if (!match && std::memcmp(data + i, a.content.data(), a.content.size()) == 0)
                    match = &a;
            } else if (!final && std::memcmp(data + i, a.content.data(), rest) == 0) {
                open = true;
                break;
            }
        }
        if (open) {
            segment(data + at, i - at);
            std::string held(reinterpret_cast<const char*>(data) + i, rest);
            held_.swap(held);
            return;
        }
        if (!match) {
            ++i;
            continue;
        }
        size_t end = i + match->content.size();
        if (match->allowed) {  // the segment ends before it
            segment(data + at, i - at);
            end_segment();
            ready_.push_back(match->id);
        } else {  // matched but not allowed: text
            segment(data + at, end - at);
        }
        at = i = end;
    }
}

void TextStream::segment(const u8* data, size_t size) {
    if (size == 0) return;
    if (!started_) {
        started_ = true;
        if (add_prefix_space_ && data[0] != ' ') segment(reinterpret_cast<const u8*>(" "), 1);
    }
    if (collect_) {
        collected_.append(reinterpret_cast<const char*>(data), size);
        return;
    }
    pieces_.feed(data, size);
    pieces_.take(ready_);
}

void TextStream::end_segment() {
    if (!started_) return;
    started_ = false;
    if (collect_) {
        segments_.push_back(std::move(collected_));
        collected_.clear();
        ready_.push_back(SEGMENT);
        return;
    }
    pieces_.finish();
    pieces_.take(ready_);
}

}  // namespace incbpe

