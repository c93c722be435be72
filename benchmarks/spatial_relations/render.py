"""Scenes for `docket/spatial_relations`: two coloured objects on a board, seen under a random
affine view.

The board is a grey square whose top edge carries a white bar (its own "up") with a cyan mark at
its top-left corner. A view applies a pose `y = M x + t` to the whole board (rotation up to a full
turn, anisotropic scale, shear, translation; normalised coordinates, y pointing down as image
rows do). Every shape is drawn as a polygon whose vertices are mapped through the pose, so the
image is exact geometry with no resampling. Questions are about the board's own frame, so the
answer does not change with the view but the picture does.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL import Image as PILImage

COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (220, 40, 40),
    "blue": (40, 80, 230),
    "green": (40, 180, 60),
    "yellow": (235, 210, 40),
}
BOARD = 0.62  # half-width of the board in normalised coordinates
BOARD_RGB = (110, 110, 110)
BAR_RGB = (250, 250, 250)
MARK_RGB = (0, 220, 220)
Point = tuple[float, float]


@dataclass(frozen=True)
class Pose:
    """Decomposed view pose (see `docket.methods.spatial.affine`): angle (radians), log scales,
    shear, translation."""

    angle: float
    log_scale_x: float
    log_scale_y: float
    shear: float
    tx: float
    ty: float

    def as_list(self) -> list[float]:
        return [self.angle, self.log_scale_x, self.log_scale_y, self.shear, self.tx, self.ty]

    def apply(self, point: Point) -> Point:
        """The view position of a board point."""
        sx, sy = math.exp(self.log_scale_x), math.exp(self.log_scale_y)
        x, y = point
        u, v = sx * x + self.shear * sy * y, sy * y
        c, s = math.cos(self.angle), math.sin(self.angle)
        return (c * u - s * v + self.tx, s * u + c * v + self.ty)


IDENTITY = Pose(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


def random_pose(rng: random.Random, *, max_angle: float = math.pi) -> Pose:
    """A pose that keeps the whole board inside the image."""
    return Pose(
        angle=rng.uniform(-max_angle, max_angle),
        log_scale_x=rng.uniform(-0.12, 0.08),
        log_scale_y=rng.uniform(-0.12, 0.08),
        shear=rng.uniform(-0.12, 0.12),
        tx=rng.uniform(-0.06, 0.06),
        ty=rng.uniform(-0.06, 0.06),
    )


@dataclass(frozen=True)
class SceneObject:
    """A coloured disc or square at a board position."""

    colour: str
    shape: str
    centre: Point
    size: float = 0.11

    def outline(self) -> list[Point]:
        cx, cy = self.centre
        if self.shape == "square":
            r = self.size
            return [(cx - r, cy - r), (cx + r, cy - r), (cx + r, cy + r), (cx - r, cy + r)]
        return [
            (cx + self.size * math.cos(a), cy + self.size * math.sin(a))
            for a in (2 * math.pi * i / 20 for i in range(20))
        ]


def _rectangle(x0: float, y0: float, x1: float, y1: float) -> list[Point]:
    return [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]


def draw(objects: list[SceneObject], pose: Pose, size: int = 64) -> PILImage.Image:
    """The view of the board with `objects` under `pose`, `size` x `size` RGB."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (size, size), (0, 0, 0))
    canvas = ImageDraw.Draw(image)

    def polygon(points: list[Point], fill: tuple[int, int, int]) -> None:
        pixels = [((x + 1) / 2 * size, (y + 1) / 2 * size) for x, y in map(pose.apply, points)]
        canvas.polygon(pixels, fill=fill)

    b = BOARD
    polygon(_rectangle(-b, -b, b, b), BOARD_RGB)
    polygon(_rectangle(-b, -b, b, -b + 0.14), BAR_RGB)
    polygon(_rectangle(-b, -b, -b + 0.2, -b + 0.2), MARK_RGB)
    for item in objects:
        polygon(item.outline(), COLOURS[item.colour])
    return image
