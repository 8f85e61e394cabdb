/* Rendering a view for a test as Headlamp renders it, and reading its bars back. */

import { render, RenderResult } from '@testing-library/react';
import React from 'react';
import { InHeadlamp } from './context';

export function renderInTheme(node: React.ReactElement): RenderResult {
  return render(<InHeadlamp>{node}</InHeadlamp>);
}

/** The bars a view drew: [domain, count] in the order shown. */
export function bars(root: ParentNode): [string, number][] {
  return Array.from(root.querySelectorAll('[data-testid="domain-bar"]')).map(el => [
    el.getAttribute('data-domain') ?? '',
    Number(el.getAttribute('data-count')),
  ]);
}
