/*
 * Big-endian field access for wire formats: the IBA headers, MADs and CM
 * messages put the most significant byte first (IBA 1.3.3 byte ordering).
 * One set of helpers for every layer that reads or writes packets.
 */
#ifndef SOF_BYTES_H
#define SOF_BYTES_H

#include <stdint.h>

static inline uint16_t sof_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t sof_get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static inline uint32_t sof_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t sof_get64(const uint8_t *p)
{
	return (uint64_t)sof_get32(p) << 32 | sof_get32(p + 4);
}

static inline void sof_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void sof_put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static inline void sof_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void sof_put64(uint8_t *p, uint64_t v)
{
	sof_put32(p, (uint32_t)(v >> 32));
	sof_put32(p + 4, (uint32_t)v);
}

#endif
