"""Allows ``python -m kappa_shop`` as a synonym for the ``kappa-shop`` command."""

from kappa_shop.cli import main

raise SystemExit(main())
