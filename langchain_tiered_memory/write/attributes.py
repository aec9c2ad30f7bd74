"""Declared attributes: which facts hold one value at a time, and which accumulate.

A new value of a **single-valued** attribute (home, employer, role, manager,
relationship status, school year, primary device, email, phone, address, a
booking, pregnancy) supersedes the current one, whichever extractor found it:
every subject an extractor may use for it (``home_city``, ``home``,
``location``...) maps to one stored subject, so the store's upsert replaces
the old version and keeps it in the history. A **many-valued** attribute
(allergies, pets, children, likes, hobbies) accumulates: each value has its own
subject (``allergy:peanuts``, ``allergy:cats``), and a bare subject
(``allergy``) gets its value's key from the content.

The schema is data and user-extensible (:meth:`AttributeSchema.with_attributes`);
pass it as ``TieredMemory(attributes=...)`` or ``MemoryStore.memory(..., attributes=...)``.

Example:
    >>> schema = AttributeSchema()
    >>> schema.canonical("location", "lives in Porto"), schema.is_single("home_city")
    ('home_city', True)
    >>> schema.canonical("allergy", "allergic to peanuts")
    'allergy:peanuts'
    >>> custom = schema.with_attributes(Attribute("gym", ("gym", "gym_membership")))
    >>> custom.canonical("gym_membership", "PureGym"), custom.is_single("gym")
    ('gym', True)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["DEFAULT_ATTRIBUTES", "Attribute", "AttributeSchema", "subject_key"]


@dataclass(frozen=True)
class Attribute:
    """One declared attribute.

    Attributes:
        name: Its name (``home``, ``allergies``).
        subjects: The subjects extractors use for it; the first is the one facts are
            stored under (single-valued), the others are aliases.
        single: Holds one value at a time (a new value supersedes the old one).
        prefix: Many-valued (or keyed) attributes: each value's subject starts with it
            (``allergy:``); a bare subject from ``subjects`` gets the key from the content.
        ends: Names of attributes a value of this one ends (a birth ends a pregnancy).
    """

    name: str
    subjects: tuple[str, ...] = ()
    single: bool = True
    prefix: str | None = None
    ends: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise ValueError("An attribute needs a name.")
        if not self.subjects and not self.prefix:
            raise ValueError(f"Attribute {self.name!r} needs subjects or a prefix.")


#: The attributes every memory declares unless given others.
DEFAULT_ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute("home", ("home_city", "home", "city", "residence", "location", "lives_in")),
    Attribute("role", ("work", "job", "role", "occupation", "job_title", "profession")),
    Attribute("employer", ("employer", "company", "workplace", "works_at")),
    Attribute("manager", ("manager", "family:boss", "family:manager", "boss")),
    Attribute("relationship", ("relationship_status", "relationship", "marital_status")),
    Attribute("school_year", ("school_year", "year_group", "grade", "school_grade")),
    Attribute("device", ("primary_device", "device", "phone_model", "computer")),
    Attribute("email", ("email", "email_address")),
    Attribute("phone", ("phone", "phone_number", "mobile", "telephone")),
    Attribute("address", ("address", "postal_address", "home_address")),
    Attribute("booking", ("plan:booking", "booking", "reservation"), prefix="plan:"),
    Attribute("pregnancy", ("health:pregnancy", "pregnancy", "pregnant")),
    Attribute("birth", ("birth", "baby_born"), ends=("pregnancy",)),
    Attribute("diet", ("diet",)),
    Attribute("name", ("name", "first_name", "user_name")),
    Attribute("age", ("age",)),
    Attribute(
        "allergies", ("allergy", "allergies", "allergic_to"), single=False, prefix="allergy:"
    ),
    Attribute("pets", ("pet", "pets"), single=False, prefix="pet:"),
    Attribute("children", ("children", "child", "kids"), single=False, prefix="family:child:"),
    Attribute("likes", ("likes", "like", "favourites"), single=False, prefix="likes:"),
    Attribute("hobbies", ("hobby", "hobbies"), single=False, prefix="hobby:"),
)

_FILLER = frozenset(
    {
        "a",
        "an",
        "the",
        "my",
        "our",
        "to",
        "of",
        "is",
        "are",
        "am",
        "i",
        "i'm",
        "has",
        "have",
        "had",
        "with",
        "and",
        "or",
        "allergic",
        "allergy",
        "allergies",
        "likes",
        "like",
        "loves",
        "love",
        "enjoys",
        "owns",
        "pet",
        "pets",
        "child",
        "children",
        "kid",
        "kids",
        "hobby",
        "hobbies",
        "does",
        "plays",
    }
)


_COLON = re.compile(r"\s*:\s*")


def subject_key(subject: str) -> str:
    """``subject`` in the form subjects are stored in: lower case, the name before the
    first ``:`` in snake case, no spaces around ``:`` (what a model writes as "Home
    City" or "home-city" is ``home_city``; a value after a prefix keeps its spaces).

    Example:
        >>> subject_key("Home City"), subject_key(" home-city ")
        ('home_city', 'home_city')
        >>> subject_key("Likes : jazz  music")
        'likes:jazz music'
    """
    key = " ".join(subject.strip().lower().split())
    head, colon, rest = key.partition(":")
    head = re.sub(r"[\s\-]+", "_", head.strip())
    if not colon:
        return head
    return head + ":" + _COLON.sub(":", rest.strip())


def _value_key(content: str) -> str:
    """The key of one value of a many-valued attribute ("allergic to peanuts" -> "peanuts")."""
    words = [w for w in re.findall(r"[\w'-]+", content.lower()) if w not in _FILLER]
    return " ".join(words[:3])


class AttributeSchema:
    """The declared attributes, looked up by subject.

    Args:
        attributes: The attributes (default :data:`DEFAULT_ATTRIBUTES`). A subject may
            belong to one attribute only.

    Raises:
        ValueError: when two attributes claim one subject, or one name is declared twice.
    """

    def __init__(self, attributes: Iterable[Attribute] = DEFAULT_ATTRIBUTES) -> None:
        self.attributes: tuple[Attribute, ...] = tuple(attributes)
        self._by_subject: dict[str, Attribute] = {}
        self._by_name: dict[str, Attribute] = {}
        for attribute in self.attributes:
            if not isinstance(attribute, Attribute):
                raise TypeError(f"An attribute schema takes Attribute values, got {attribute!r}.")
            if attribute.name in self._by_name:
                raise ValueError(f"Attribute {attribute.name!r} is declared twice.")
            self._by_name[attribute.name] = attribute
            for subject in attribute.subjects:
                key = subject.strip().lower()
                if key in self._by_subject:
                    raise ValueError(
                        f"Subject {key!r} belongs to both {self._by_subject[key].name!r} "
                        f"and {attribute.name!r}."
                    )
                self._by_subject[key] = attribute

    def with_attributes(self, *attributes: Attribute) -> AttributeSchema:
        """This schema with ``attributes`` added (one with a declared name replaces it)."""
        names = {a.name for a in attributes}
        return AttributeSchema(
            [a for a in self.attributes if a.name not in names] + list(attributes)
        )

    def named(self, name: str) -> Attribute | None:
        """The attribute called ``name``, if declared."""
        return self._by_name.get(name)

    def attribute(self, subject: str) -> Attribute | None:
        """The attribute ``subject`` belongs to (by name or by prefix), if any.

        Example:
            >>> AttributeSchema().attribute("allergy:peanuts").name
            'allergies'
        """
        key = subject_key(subject)
        if key in self._by_subject:
            return self._by_subject[key]
        for attribute in self.attributes:
            if attribute.prefix and key.startswith(attribute.prefix):
                return attribute
        return None

    def is_single(self, subject: str) -> bool:
        """Whether ``subject``'s value replaces the one before (an undeclared subject: its
        own slot, replaced by a fact with the same subject, as always)."""
        attribute = self.attribute(subject)
        return attribute is None or attribute.single

    def canonical(self, subject: str, content: str) -> str:
        """The subject a fact is stored under: a single-valued attribute's first subject; a
        bare many-valued one gets its value's key from ``content``; others stay as they are
        (in :func:`subject_key` form). Whichever extractor names it, and however ("home
        city", "home_city", "location"), one attribute is one subject.

        Example:
            >>> schema = AttributeSchema()
            >>> [schema.canonical(s, "Porto") for s in ("Home City", "home_city", "lives in")]
            ['home_city', 'home_city', 'home_city']
        """
        key = subject_key(subject)
        attribute = self._by_subject.get(key)
        if attribute is None:
            return key
        if attribute.single:
            return attribute.subjects[0]
        value = _value_key(content)
        return f"{attribute.prefix}{value}" if value and attribute.prefix else key

    def same_slot(self, subject: str) -> tuple[str, ...]:
        """Other subjects that hold ``subject``'s single value (its attribute's aliases)."""
        attribute = self._by_subject.get(subject_key(subject))
        if attribute is None or not attribute.single or attribute.prefix:
            return ()
        return tuple(s for s in attribute.subjects if s != subject)

    def ended_by(self, subject: str) -> tuple[str, ...]:
        """Subjects a new value of ``subject`` ends (a birth ends a pregnancy)."""
        attribute = self.attribute(subject)
        if attribute is None:
            return ()
        ended: list[str] = []
        for name in attribute.ends:
            other = self._by_name.get(name)
            if other is not None:
                ended.extend(other.subjects)
        return tuple(ended)
