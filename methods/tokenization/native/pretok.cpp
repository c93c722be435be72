// Scanners equivalent to the GPT-2, cl100k_base and o200k_base split patterns, and the
// split-then-BPE pipeline. Each scanner mirrors its pattern's alternatives in order,
// including the backtracking of the greedy quantifiers, so pieces are identical.
#include "pretok.hpp"

#include <algorithm>
#include <array>
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

void Decoded::decode(const u8* s, size_t size) {
    // Valid UTF-8 becomes code points; any invalid byte stands for itself as one unit of class
    // "other" (Python strings are always valid; this only keeps bad input from crashing).
    const ClassTable& t = table();
    cp.clear();
    cls.clear();
    offset.clear();
    cp.reserve(size);
    cls.reserve(size);
    offset.reserve(size + 1);
    size_t i = 0;
    while (i < size) {
        u32 c = s[i];
        size_t len = 1;
        if (c >= 0x80) {
            size_t need = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
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
                c = value;
                len = need + 1;
            } else {
                c = 0x110000 + s[i];  // not a code point: class 0
            }
        }
        offset.push_back(u32(i));
        cp.push_back(c);
        cls.push_back(c < 0x110000 ? t.value[size_t(t.block[c >> 8]) * 256 + (c & 255)] : 0);
        i += len;
    }
    offset.push_back(u32(size));
}

namespace {

struct Scanner {
    const Decoded& t;
    size_t n;
    bool touched = false;  // read past the end of the text

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
    size_t run(size_t k, u16 mask) {
        while (cls(k) & mask) ++k;
        return k;
    }
    size_t run_other(size_t k) {
        while (other(k)) ++k;
        return k;
    }
    size_t run_newlines(size_t k, bool slash = false) {
        for (;;) {
            u32 c = cp(k);
            if (c == '\r' || c == '\n' || (slash && c == '/'))
                ++k;
            else
                return k;
        }
    }
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
        if (q >= n) return n;  // (?!\S) holds at the end of the text
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
        if (q >= n) return n;  // \s++$
        for (size_t k = q; k-- > i;)
            if (t.cp[k] == '\r' || t.cp[k] == '\n') return k + 1;  // \s*[\r\n]
        return trailing_space(i, q);
    }

    // [^\r\n\p{L}\p{N}]?[UPPER]*[LOWER]+(?i:'s|...)?|[^\r\n\p{L}\p{N}]?[UPPER]+[LOWER]*(?i:..)?
    // |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
    static constexpr u16 UPPER = C_LU | C_LT | C_LM | C_LO | C_M;
    static constexpr u16 LOWER = C_LL | C_LM | C_LO | C_M;
    size_t with_contraction(size_t e) {
        size_t c = contraction(e, true);
        return c ? c : e;
    }
    // UPPER* LOWER+ from j (greedy UPPER* backs off until LOWER+ can match); 0 on failure
    size_t upper_then_lower(size_t j) {
        size_t u_end = run(j, UPPER);
        for (size_t k = u_end + 1; k-- > j;)
            if (cls(k) & LOWER) return with_contraction(run(k + 1, LOWER));
        return 0;
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
        for (size_t k = std::min(q, n); k-- > i;)
            if (t.cp[k] == '\r' || t.cp[k] == '\n') return k + 1;  // \s*[\r\n]+
        return trailing_space(i, q);
    }
};

}  // namespace

size_t split_pieces(Split kind, const Decoded& text, bool eof, std::vector<u32>& ends) {
    size_t n = text.cp.size();
    if (kind == Split::Whole) {
        if (eof && n) ends.push_back(u32(n));
        return eof ? n : 0;
    }
    Scanner s{text, n};
    size_t i = 0;
    while (i < n) {
        s.touched = false;
        size_t e = kind == Split::Gpt2 ? s.gpt2(i) : kind == Split::Cl100k ? s.cl100k(i) : s.o200k(i);
        if (e <= i || e > n) e = i + 1;  // never stall (cannot happen for valid classes)
        if (s.touched && !eof) break;
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

}  // namespace incbpe
