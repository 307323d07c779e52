/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SHA-1 and SHA-256 (FIPS 180-4), so that the tests compute the
 * security.ima values IMA must write without depending on a library, and
 * hash_self_test(): known answers that prove the code right before any
 * verdict relies on it.
 */

#ifndef _IMA_APPRAISE_HASH_H
#define _IMA_APPRAISE_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

#define SHA1_LEN 20
#define SHA256_LEN 32

/* ---- SHA-256 ---- */

struct sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	size_t used;
};

static const uint32_t sha256_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR32(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static inline void sha256_block(struct sha256 *s, const uint8_t *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, h, t1, t2;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | p[4 * i + 1] << 16 |
		       p[4 * i + 2] << 8 | p[4 * i + 3];
	for (; i < 64; i++)
		w[i] = w[i - 16] + w[i - 7] +
		       (ROR32(w[i - 15], 7) ^ ROR32(w[i - 15], 18) ^
			(w[i - 15] >> 3)) +
		       (ROR32(w[i - 2], 17) ^ ROR32(w[i - 2], 19) ^
			(w[i - 2] >> 10));
	a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3];
	e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
	for (i = 0; i < 64; i++) {
		t1 = h + (ROR32(e, 6) ^ ROR32(e, 11) ^ ROR32(e, 25)) +
		     ((e & f) ^ (~e & g)) + sha256_k[i] + w[i];
		t2 = (ROR32(a, 2) ^ ROR32(a, 13) ^ ROR32(a, 22)) +
		     ((a & b) ^ (a & c) ^ (b & c));
		h = g, g = f, f = e, e = d + t1;
		d = c, c = b, b = a, a = t1 + t2;
	}
	s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d;
	s->h[4] += e, s->h[5] += f, s->h[6] += g, s->h[7] += h;
}

static inline void sha256(const void *data, size_t len, uint8_t out[SHA256_LEN])
{
	static const uint32_t init[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};
	struct sha256 s = { .len = len };
	const uint8_t *p = data;
	uint64_t bits = (uint64_t)len * 8;
	int i;

	memcpy(s.h, init, sizeof(init));
	for (; len >= 64; len -= 64, p += 64)
		sha256_block(&s, p);
	memcpy(s.buf, p, len);
	s.buf[len++] = 0x80;
	if (len > 56) {
		memset(s.buf + len, 0, 64 - len);
		sha256_block(&s, s.buf);
		len = 0;
	}
	memset(s.buf + len, 0, 56 - len);
	for (i = 0; i < 8; i++)
		s.buf[56 + i] = bits >> (56 - 8 * i);
	sha256_block(&s, s.buf);
	for (i = 0; i < 32; i++)
		out[i] = s.h[i / 4] >> (24 - 8 * (i % 4));
}

/* ---- SHA-1, the default ima_hash of the kernels under test ---- */

#define ROL32(x, n) (((x) << (n)) | ((x) >> (32 - (n))))

static inline void sha1_block(uint32_t h[5], const uint8_t *p)
{
	uint32_t w[80], a, b, c, d, e, f, k, t;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | p[4 * i + 1] << 16 |
		       p[4 * i + 2] << 8 | p[4 * i + 3];
	for (; i < 80; i++)
		w[i] = ROL32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
	for (i = 0; i < 80; i++) {
		if (i < 20)
			f = (b & c) | (~b & d), k = 0x5a827999;
		else if (i < 40)
			f = b ^ c ^ d, k = 0x6ed9eba1;
		else if (i < 60)
			f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdc;
		else
			f = b ^ c ^ d, k = 0xca62c1d6;
		t = ROL32(a, 5) + f + e + k + w[i];
		e = d, d = c, c = ROL32(b, 30), b = a, a = t;
	}
	h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
}

static inline void sha1(const void *data, size_t len, uint8_t out[SHA1_LEN])
{
	uint32_t h[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476,
			  0xc3d2e1f0 };
	const uint8_t *p = data;
	uint64_t bits = (uint64_t)len * 8;
	uint8_t buf[64];
	int i;

	for (; len >= 64; len -= 64, p += 64)
		sha1_block(h, p);
	memcpy(buf, p, len);
	buf[len++] = 0x80;
	if (len > 56) {
		memset(buf + len, 0, 64 - len);
		sha1_block(h, buf);
		len = 0;
	}
	memset(buf + len, 0, 56 - len);
	for (i = 0; i < 8; i++)
		buf[56 + i] = bits >> (56 - 8 * i);
	sha1_block(h, buf);
	for (i = 0; i < SHA1_LEN; i++)
		out[i] = h[i / 4] >> (24 - 8 * (i % 4));
}

/*
 * FIPS 180-4 example messages: empty, one block, and 56 bytes, whose
 * padding spills into a second block.  Returns NULL, or which answer is
 * wrong.
 */
static inline const char *hash_self_test(void)
{
	static char wrong[64];
	static const struct {
		const char *name, *msg;
		uint8_t sha1[SHA1_LEN], sha256[SHA256_LEN];
	} kat[] = {
		{ "\"\"",
		  "",
		  { 0xda, 0x39, 0xa3, 0xee, 0x5e, 0x6b, 0x4b, 0x0d, 0x32, 0x55,
		    0xbf, 0xef, 0x95, 0x60, 0x18, 0x90, 0xaf, 0xd8, 0x07, 0x09 },
		  { 0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14,
		    0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24,
		    0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c,
		    0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55 } },
		{ "\"abc\"",
		  "abc",
		  { 0xa9, 0x99, 0x3e, 0x36, 0x47, 0x06, 0x81, 0x6a, 0xba, 0x3e,
		    0x25, 0x71, 0x78, 0x50, 0xc2, 0x6c, 0x9c, 0xd0, 0xd8, 0x9d },
		  { 0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea,
		    0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
		    0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c,
		    0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad } },
		{ "56 bytes",
		  "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  { 0x84, 0x98, 0x3e, 0x44, 0x1c, 0x3b, 0xd2, 0x6e, 0xba, 0xae,
		    0x4a, 0xa1, 0xf9, 0x51, 0x29, 0xe5, 0xe5, 0x46, 0x70, 0xf1 },
		  { 0x24, 0x8d, 0x6a, 0x61, 0xd2, 0x06, 0x38, 0xb8,
		    0xe5, 0xc0, 0x26, 0x93, 0x0c, 0x3e, 0x60, 0x39,
		    0xa3, 0x3c, 0xe4, 0x59, 0x64, 0xff, 0x21, 0x67,
		    0xf6, 0xec, 0xed, 0xd4, 0x19, 0xdb, 0x06, 0xc1 } },
	};
	uint8_t out[SHA256_LEN];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(kat); i++) {
		sha1(kat[i].msg, strlen(kat[i].msg), out);
		if (memcmp(out, kat[i].sha1, SHA1_LEN)) {
			snprintf(wrong, sizeof(wrong), "sha1(%s)", kat[i].name);
			return wrong;
		}
		sha256(kat[i].msg, strlen(kat[i].msg), out);
		if (memcmp(out, kat[i].sha256, SHA256_LEN)) {
			snprintf(wrong, sizeof(wrong), "sha256(%s)",
				 kat[i].name);
			return wrong;
		}
	}
	return NULL;
}

#endif /* _IMA_APPRAISE_HASH_H */
