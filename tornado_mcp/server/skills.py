"""The former home of :mod:`tornado_mcp.extensions.skills` (agent skills), kept so that
``from tornado_mcp.server.skills import SkillError`` still works: it names the same
objects.  New code imports from :mod:`tornado_mcp.extensions.skills`."""

from ..extensions.skills import (
    DIRECTORY_MIME,
    MAX_SKILL_BYTES,
    MAX_SKILL_FILES,
    MAX_SKILL_SUBSCRIPTIONS,
    MAX_SKILLS,
    SKILLS_EXTENSION,
    Skill,
    SkillCatalog,
    SkillError,
    SkillFile,
)

__all__ = ["DIRECTORY_MIME", "MAX_SKILLS", "MAX_SKILL_BYTES", "MAX_SKILL_FILES",
           "MAX_SKILL_SUBSCRIPTIONS", "SKILLS_EXTENSION", "Skill", "SkillCatalog",
           "SkillError", "SkillFile"]
