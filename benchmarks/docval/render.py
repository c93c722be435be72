"""Pillow renderer for procedural documents that records every word's exact pixel box.

A `Canvas` places text segments (one OCR-like region each) word by word with `ImageDraw.text`
and stores `draw.textbbox` per word; a segment's box is the union of its words' boxes.
`augment` applies rotation, scale, blur and JPEG compression and maps every box exactly (the
axis-aligned box enclosing the transformed corners, rounded outwards).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PIL import Image as PILImage
    from PIL import ImageFont

Box = tuple[int, int, int, int]

FONT_DIR = Path(__file__).parent / "fonts"
FONTS = {
    "sans": "DejaVuSans.ttf",
    "bold": "DejaVuSans-Bold.ttf",
    "mono": "DejaVuSansMono.ttf",
    "serif": "DejaVuSerif.ttf",
}


def union(boxes: list[Box]) -> Box:
    """The smallest box enclosing all `boxes`."""
    if not boxes:
        raise ValueError("union of no boxes")
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )


def font(style: str, size: int) -> ImageFont.FreeTypeFont:
    """A shipped DejaVu font (`sans`, `bold`, `mono`, `serif`) at `size` px."""
    from PIL import ImageFont

    return ImageFont.truetype(str(FONT_DIR / FONTS[style]), size)


@dataclass
class Word:
    """One rendered word, its box and the segment (region) it belongs to."""

    text: str
    box: Box
    segment: int
    style: str = "sans"
    size: int = 16


@dataclass
class Segment:
    """A run of words drawn together: the unit a text detector would return as a region."""

    id: int
    text: str
    box: Box
    word_ids: list[int]


@dataclass
class Page:
    """A rendered page: image plus word and segment boxes in its pixel coordinates."""

    image: PILImage.Image
    words: list[Word] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) in pixels."""
        return self.image.size


class Canvas:
    """A white page on which text segments are drawn word by word."""

    def __init__(self, width: int, height: int) -> None:
        from PIL import Image, ImageDraw

        self.page = Page(image=Image.new("L", (width, height), 255))
        self.draw = ImageDraw.Draw(self.page.image)

    def text(
        self,
        x: float,
        y: float,
        text: str,
        style: str = "sans",
        size: int = 16,
        align: str = "left",
    ) -> Segment:
        """Draw `text` as one segment starting at (x, y) (or ending at x when align='right')."""
        face = font(style, size)
        words = text.split()
        if not words:
            raise ValueError("empty text segment")
        space = face.getlength(" ")
        if align == "right":
            x -= face.getlength(" ".join(words))
        segment_id = len(self.page.segments)
        word_ids: list[int] = []
        cursor = x
        for token in words:
            origin = (round(cursor), round(y))
            self.draw.text(origin, token, font=face, fill=0)
            left, top, right, bottom = (
                int(v) for v in self.draw.textbbox(origin, token, font=face)
            )
            word_ids.append(len(self.page.words))
            self.page.words.append(Word(token, (left, top, right, bottom), segment_id, style, size))
            cursor += face.getlength(token) + space
        box = union([self.page.words[i].box for i in word_ids])
        segment = Segment(segment_id, " ".join(words), box, word_ids)
        self.page.segments.append(segment)
        return segment

    def width_of(self, text: str, style: str = "sans", size: int = 16) -> float:
        """Advance width of `text` in pixels."""
        return font(style, size).getlength(text)

    def hline(self, x1: float, x2: float, y: float, width: int = 1) -> None:
        """A horizontal rule (ink outside any word box)."""
        self.draw.line([(x1, y), (x2, y)], fill=0, width=width)

    def rect(self, box: tuple[float, float, float, float]) -> None:
        """An outlined rectangle (table cell or form field frame)."""
        self.draw.rectangle(box, outline=0, width=1)


@dataclass(frozen=True)
class Augment:
    """Image degradations applied after layout; boxes follow them exactly."""

    rotate: float = 0.0
    scale: float = 1.0
    blur: float = 0.0


def _rotate_box(box: Box, angle: float, centre: tuple[float, float], size: tuple[int, int]) -> Box:
    rad = math.radians(angle)
    cos, sin = math.cos(rad), math.sin(rad)
    cx, cy = centre
    xs: list[float] = []
    ys: list[float] = []
    for px, py in ((box[0], box[1]), (box[2], box[1]), (box[0], box[3]), (box[2], box[3])):
        dx, dy = px - cx, py - cy
        # PIL rotates counter-clockwise on screen (y axis points down).
        xs.append(cx + dx * cos + dy * sin)
        ys.append(cy - dx * sin + dy * cos)
    return _clip(
        (math.floor(min(xs)), math.floor(min(ys)), math.ceil(max(xs)), math.ceil(max(ys))), size
    )


def _clip(box: Box, size: tuple[int, int]) -> Box:
    w, h = size
    return (max(0, box[0]), max(0, box[1]), min(w, box[2]), min(h, box[3]))


def augment(page: Page, aug: Augment) -> Page:
    """Return a new page with `aug` applied to the image and to every word and segment box."""
    from PIL import Image, ImageFilter

    image = page.image
    size = image.size
    boxes = [w.box for w in page.words]
    if aug.rotate:
        centre = (size[0] / 2, size[1] / 2)
        image = image.rotate(
            aug.rotate, resample=Image.Resampling.BICUBIC, center=centre, fillcolor=255
        )
        boxes = [_rotate_box(b, aug.rotate, centre, size) for b in boxes]
    if aug.scale != 1.0:
        new = (round(size[0] * aug.scale), round(size[1] * aug.scale))
        fx, fy = new[0] / size[0], new[1] / size[1]
        image = image.resize(new, Image.Resampling.LANCZOS)
        boxes = [
            _clip(
                (
                    math.floor(b[0] * fx),
                    math.floor(b[1] * fy),
                    math.ceil(b[2] * fx),
                    math.ceil(b[3] * fy),
                ),
                new,
            )
            for b in boxes
        ]
        size = new
    if aug.blur:
        image = image.filter(ImageFilter.GaussianBlur(aug.blur))
    words = [
        Word(w.text, b, w.segment, w.style, w.size) for w, b in zip(page.words, boxes, strict=True)
    ]
    segments = [
        Segment(s.id, s.text, union([words[i].box for i in s.word_ids]), list(s.word_ids))
        for s in page.segments
    ]
    return Page(image=image, words=words, segments=segments)


def jpeg_bytes(image: PILImage.Image, quality: int) -> bytes:
    """The image as an optimised greyscale JPEG."""
    buffer = io.BytesIO()
    image.convert("L").save(buffer, format="JPEG", quality=quality, optimize=True)
    return buffer.getvalue()


def page_record(page: Page) -> dict[str, Any]:
    """The page's layout as plain JSON-able data (no image)."""
    return {
        "width": page.size[0],
        "height": page.size[1],
        "words": [[w.text, *w.box, w.segment] for w in page.words],
        "segments": [[s.id, *s.box, s.text] for s in page.segments],
    }
